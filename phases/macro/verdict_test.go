package macro_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// verdictSweep sweeps an emulator with a scraper and returns its plateau.
func verdictSweep(t *testing.T, emu vllmemu.Config, cfg macro.Config) *macro.Result {
	t.Helper()
	_, url := startEmu(t, emu)
	cfg.URL = url
	if cfg.Scraper == nil {
		cfg.Scraper = servermetrics.NewScraper(url+"/metrics", nil)
	}
	if cfg.Duration == 0 {
		cfg.Duration = 1200 * time.Millisecond
	}
	cfg.Seed = 7
	if cfg.ClientBoundLag == 0 {
		// These sweeps test the server's verdicts. On a loaded test
		// machine the client's send lag is real and would rightly come
		// first; TestVerdictClientBound tests that verdict.
		cfg.ClientBoundLag = time.Second
	}
	res := runSweep(t, cfg)
	if res.Plateau == nil {
		for _, l := range res.Levels {
			t.Logf("C=%d %.0f tok/s server %+v", l.Concurrency, l.OutputThroughput, l.Server)
		}
		t.Fatal("no plateau")
	}
	t.Logf("%s: %s", res.Plateau.Reason, res.Plateau.Evidence)
	return res
}

func wantVerdict(t *testing.T, p *phases.Plateau, reason string, words ...string) {
	t.Helper()
	if p.Reason != reason {
		t.Errorf("reason %q, want %q: %s", p.Reason, reason, p.Evidence)
	}
	for _, w := range words {
		if !strings.Contains(p.Evidence, w) {
			t.Errorf("evidence %q lacks %q", p.Evidence, w)
		}
	}
}

// TestVerdictMaxNumSeqs: 8 seats, 16 sent: 8 of 8 running, 8 waiting.
func TestVerdictMaxNumSeqs(t *testing.T) {
	t.Parallel()
	res := verdictSweep(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 100 * time.Microsecond, PrefillPerToken: 1, MaxNumSeqs: 8},
		macro.Config{Concurrency: []int{4, 8, 16}, InputLen: 16, OutputLen: 20, Limits: macro.Limits{MaxNumSeqs: 8, Source: "the launch command"}})
	wantVerdict(t, res.Plateau, macro.LimitMaxSeqs, "plateau at C=8", "8 of 8 sequences running", "waiting at C=16", "raise --max-num-seqs")
}

// TestVerdictKVCache: a KV cache of about seven requests: preemptions.
func TestVerdictKVCache(t *testing.T) {
	t.Parallel()
	res := verdictSweep(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 100 * time.Microsecond, PrefillPerToken: 1,
		MaxNumSeqs: 1000, KVCacheTokens: 400}, macro.Config{Concurrency: []int{4, 16, 32}, InputLen: 16, OutputLen: 40})
	wantVerdict(t, res.Plateau, macro.LimitKVCache, "KV cache", "preemptions", "--gpu-memory-utilization")
}

// TestVerdictEngineStep: every request runs, none waits, the step grows.
func TestVerdictEngineStep(t *testing.T) {
	t.Parallel()
	// Throughput C/(4+2C) per ms: 16→32 adds 6% (a plateau at 16 by the
	// model, not by the run's overheads), 4→16 adds 33%.
	res := verdictSweep(t, vllmemu.Config{StepTime: 4 * time.Millisecond, StepPerSeq: 2 * time.Millisecond, PrefillPerToken: 1, MaxNumSeqs: 1000},
		macro.Config{Concurrency: []int{4, 16, 32}, InputLen: 16, OutputLen: 30})
	wantVerdict(t, res.Plateau, macro.LimitStep, "none waiting", "TPOT", "decode step grows")
	// Asked about C=4, the verdict names the level it read (the one above).
	_, ev := macro.Explain(res.Levels, 0, macro.Limits{})
	if !strings.HasPrefix(ev, "C=4: at C=16 all its 16 requests running") {
		t.Fatalf("explain C=4: %q", ev)
	}
}

// slowWriter is a per-request record file on a slow disk: the client
// throttled on purpose.
type slowWriter struct {
	mu sync.Mutex
	d  time.Duration
}

func (w *slowWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	time.Sleep(w.d)
	return len(b), nil
}

// TestVerdictClientBound: the client's own dispatcher is slowed (its
// record file sleeps), the audit flags the level and the verdict asked for
// that level names the client.
func TestVerdictClientBound(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, MaxNumSeqs: 1000})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{8, 16}, Duration: time.Second, InputLen: 16, OutputLen: 20, Seed: 7,
		Scraper: servermetrics.NewScraper(url+"/metrics", nil), JSONL: &slowWriter{d: 30 * time.Millisecond}})
	if !res.Levels[0].ClientBound {
		t.Fatalf("C=8 not client-bound: lag p99 %.1f ms", res.Levels[0].P99SendLagms)
	}
	reason, ev := macro.Explain(res.Levels, 0, macro.Limits{})
	t.Log(ev)
	wantVerdict(t, &phases.Plateau{Reason: reason, Evidence: ev}, macro.LimitClient, "the client limited C=8", "p99 send lag")
}

// TestVerdictUnknownWithoutMetrics: no /metrics, nothing to tell by.
func TestVerdictUnknownWithoutMetrics(t *testing.T) {
	t.Parallel()
	// 20 ms steps: the client's own time per request stays small beside
	// the engine's on a loaded machine, so C=8 gains nothing over C=4.
	res := verdictSweep(t, vllmemu.Config{StepTime: 20 * time.Millisecond, StepPerSeq: 100 * time.Microsecond, PrefillPerToken: 1, MaxNumSeqs: 4},
		macro.Config{Concurrency: []int{4, 8}, InputLen: 16, OutputLen: 20, Duration: 2 * time.Second,
			Scraper: servermetrics.NewScraper("http://127.0.0.1:1/metrics", nil)})
	wantVerdict(t, res.Plateau, macro.LimitUnknown, "unknown", "/metrics")
}

// wantSeqs checks read against each text's max_num_seqs.
func wantSeqs(t *testing.T, read func(string) int, cases map[string]int) {
	t.Helper()
	for text, want := range cases {
		if got := read(text); got != want {
			t.Errorf("%q: %d, want %d", text, got, want)
		}
	}
}

func TestMaxNumSeqsFromLaunch(t *testing.T) {
	wantSeqs(t, macro.MaxNumSeqsFromLaunch, map[string]int{
		"vllm serve m --max-num-seqs 256 --port 8000":                    256,
		"vllm serve m --max-num-seqs=64":                                 64,
		"python -m vllm.entrypoints.openai.api_server --max_num_seqs 32": 32,
		"vllm serve m --tensor-parallel-size 8":                          0,
		"vllm serve m --max-num-seqs abc":                                0,
	})
}

func TestMaxNumSeqsFromLog(t *testing.T) {
	wantSeqs(t, macro.MaxNumSeqsFromLog, map[string]int{
		"(APIServer pid=1) INFO 11-30 [utils.py:253] non-default args: {'model': 'm', 'max_num_seqs': 64, 'tensor_parallel_size': 8}": 64,
		"DEBUG 01-01 arg_utils.py:1] Setting max_num_seqs to 256 for OPENAI_API_SERVER usage context.":                                256,
		"INFO non-default args: {'model': 'm'}\nINFO Chunked prefill is enabled with max_num_batched_tokens=8192.":                    0,
		"first run max_num_seqs=128\nrestart: 'max_num_seqs': 32":                                                                     32,
	})
}

// h200Level is one level of the rig's sweeps on an H200 (TP 1, whole
// prefills between decode steps), with the scheduler's figures as the
// journal has them.
func h200Level(c int, tokS, tpot, meanRun, maxRun, atMax, waitShare, maxWait, kv float64) phases.LevelResult {
	return phases.LevelResult{Concurrency: c, Completed: 2 * c, OutputThroughput: tokS, MedianTPOTms: tpot,
		Server: &phases.ServerLevel{Available: true, MeanRunning: meanRun, MaxRunning: maxRun, AtMaxRunningShare: atMax,
			WaitingShare: waitShare, MaxWaiting: maxWait, MaxKVCacheUsage: kv, Samples: 20}}
}

// TestVerdictMaxNumSeqsUnderPrefills: the rig's baseline on an H200
// (--max-num-seqs 128) ran 128 at most at C=256 with 255 waiting, but at
// the cap in only 40% of the scrapes (98.7 on average): whole prefills
// between decode steps keep new requests out of the running count. The
// cap, known from the launch, was reached under a standing queue: the
// verdict is max_num_seqs. The same sweep with --max-num-seqs 64 (at the
// cap in 62% of the scrapes) keeps its verdict; without the cap known, a
// cap reached in 40% of the scrapes tells nothing.
func TestVerdictMaxNumSeqsUnderPrefills(t *testing.T) {
	launch := macro.Limits{Source: "the launch command", Looked: true}
	base := []phases.LevelResult{
		h200Level(32, 1874.3, 15.607, 19, 32, 0.6, 0.2, 7, 0.085),
		h200Level(128, 3757.2, 30.335, 87.9, 128, 0.222, 0.667, 107, 0.341),
		h200Level(256, 3595.2, 33.503, 98.7, 128, 0.4, 0.933, 255, 0.357),
	}
	lim := launch
	lim.MaxNumSeqs = 128
	reason, ev := macro.Explain(base, 1, lim)
	wantVerdict(t, &phases.Plateau{Reason: reason, Evidence: ev}, macro.LimitMaxSeqs, "plateau at C=128", "128 of 128 sequences running",
		"at the cap in 40% of the scrapes", "98.7 running on average", "255 waiting at C=256", "raise --max-num-seqs")
	cap64 := []phases.LevelResult{
		h200Level(32, 1830.8, 15.827, 19.1, 32, 0.6, 0.2, 4, 0.165),
		h200Level(128, 2838.3, 21.215, 50.7, 64, 0.6, 0.9, 108, 0.363),
		h200Level(256, 2758.0, 22.239, 53.7, 64, 0.625, 0.9375, 247, 0.342),
	}
	lim.MaxNumSeqs = 64
	reason, ev = macro.Explain(cap64, 1, lim)
	wantVerdict(t, &phases.Plateau{Reason: reason, Evidence: ev}, macro.LimitMaxSeqs, "64 of 64 sequences running", "247 waiting at C=256")
	if strings.Contains(ev, "on average") {
		t.Errorf("a cap held most of the level needs no word on the mean: %s", ev)
	}
	if reason, ev := macro.Explain(base, 1, launch); reason != macro.LimitUnknown {
		t.Errorf("cap not known: %s: %s", reason, ev)
	}
}

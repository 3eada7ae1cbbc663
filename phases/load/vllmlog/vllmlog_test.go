package vllmlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type want struct {
	version     string
	state       string
	stage       string
	shards      [2]int // done,total; 0,0 = null
	weights     float64
	loadSeconds float64
	kvTokens    int64
	ranks       int
	failure     string
	failLine    string // substring of the evidence line
}

var fixtures = map[string]want{
	"vllm-log-02-v0.12-tp8-llama4scout-h200.txt":                   {state: "loaded", stage: "compile", shards: [2]int{50, 50}, weights: 27.8072, loadSeconds: 495.846125, ranks: 7},
	"vllm-log-03-v0.7.1-tp8-a100-sagemaker-ansi.txt":               {version: "0.7.1", state: "loaded", stage: "cuda_graphs", weights: 3.97, ranks: 2}, // from its memory profile: "model weights take 3.97GiB"; the excerpt shows two of its V0 worker processes
	"vllm-log-04-v0.8.2-tp4-v1-vllmworker-dsv2lite.txt":            {state: "loaded", stage: "weights", shards: [2]int{4, 4}, weights: 7.3858, loadSeconds: 4.037179, ranks: 4},
	"vllm-log-05-v0.9-rocm-tp4-dsr1-prefix-then-bar.txt":           {state: "loading", stage: "weights", shards: [2]int{105, 163}, ranks: 1},
	"vllm-log-07-ascend-dp-tp-ep-loading-timeout-FAILURE.txt":      {state: "failed", stage: "weights", shards: [2]int{138, 161}, ranks: 1, failure: "timeout", failLine: "launch_core_engines"},
	"vllm-log-08-v0.19-tp8-b200-dsr1-hang-after-nccl-FAILURE.txt":  {state: "loading", stage: "starting"},
	"vllm-log-09-v0.25-2node-tp16-dsv4pro-worker-prefix.txt":       {state: "loading", stage: "starting", ranks: 6},
	"vllm-log-10-v0.2x-dsv4-tp-ep-worker-TP0_EP0-slow-loading.txt": {state: "loading", stage: "weights", shards: [2]int{13, 46}, ranks: 2},
	"vllm-log-11-v0.8.3-tp8-h20-dsv2lite-hang-FAILURE.txt":         {version: "0.8.3", state: "loading", stage: "starting"},
	"vllm-log-13-v0.6-tp8-v0-memory-profiling-gpu-blocks.txt":      {state: "loaded", stage: "cuda_graphs", weights: 18.4902, kvTokens: 5691 * 16, ranks: 8},
	"vllm-log-14-nccl-errors-v0.5-v0.8-FAILURE.txt":                {state: "failed", stage: "starting", failure: "nccl", failLine: "NCCL error: unhandled system error", ranks: 2}, // the Ray worker pid 880, and the V0 worker pid 232 that failed in init_device
	"vllm-log-16-v0.11-dp-tp-ep-openpangu-ws32-cudagraph.txt":      {state: "loaded", stage: "cuda_graphs", ranks: 4},
	"vllm-log-17-v0.10.2-tp4-ep-slow-shards-graph-capture.txt":     {state: "loaded", stage: "cuda_graphs", shards: [2]int{74, 96}, ranks: 4},
	"vllm-log-19-v0.17-v0.2x-kvcache-cudagraph-memory-lines.txt":   {state: "loaded", stage: "cuda_graphs", shards: [2]int{9, 9}, weights: 12.66, loadSeconds: 31.657031, kvTokens: 188640, ranks: 2},
	"vllm-log-21-slow-loading-tp0-pp0-and-v0.6-interleave.txt":     {state: "loaded", stage: "weights", shards: [2]int{163, 163}, weights: 79.41, ranks: 10}, // four excerpts: TP0, PP0, a V0 worker, and the HPU block's seven V0 workers (its driver is the rank 0 already seen)
	"vllm-log-22-v0.5-single-gpu-and-tp8-with-external-poller.txt": {state: "loaded", stage: "cuda_graphs", shards: [2]int{3, 3}, weights: 13.5083, kvTokens: 54775 * 16, ranks: 7},
	"vllm-log-23-v0.10-enginecore0-single-gpu-rocm.txt":            {state: "loaded", stage: "kv_cache", shards: [2]int{3, 3}, weights: 7.6785, loadSeconds: 2.195456, ranks: 1},
	// Two logs in one file: the first's worker that read its weights is a
	// rank as well as the second's driver and worker.
	"vllm-log-24-stall-signals-shm-broadcast-and-nccl-debug.txt": {state: "loaded", stage: "kv_cache", weights: 30.7098, loadSeconds: 11.18, kvTokens: 1126400, ranks: 3},
	// Real logs the parser misread before: wrappers, nested prefixes, collapsed pastes, "Timeout" in an identifier.
	"real-01-ascend-npu-sync-with-timeout-identifier-FAILURE.txt": {state: "failed", stage: "starting", ranks: 1, failure: "device", failLine: "PTA call acl api failed"},
	"real-02-ascend-nested-worker-prefix-FAILURE.txt":             {state: "failed", stage: "starting", ranks: 3, failure: "device", failLine: "NPU function error"},
	"real-03-journald-vllm-service.txt":                           {state: "loading", stage: "weights", shards: [2]int{1, 1}},
	"real-04-lemonade-rocm-hip-oom-FAILURE.txt":                   {state: "failed", stage: "starting", failure: "oom", failLine: "HIP out of memory"},
	"real-05-kimi-oom-in-cuda-graph-capture-FAILURE.txt":          {state: "failed", stage: "cuda_graphs", ranks: 4, failure: "oom", failLine: "CUDA out of memory"},
	"real-06-server-wrapper-prefix-bar.txt":                       {state: "loading", stage: "weights", shards: [2]int{2, 2}},
	"real-07-docker-compose-prefix.txt":                           {version: "0.8.4", state: "loading", stage: "weights", shards: [2]int{1, 2}},
	"real-08-collapsed-newlines-paste.txt":                        {state: "loaded", stage: "weights", shards: [2]int{30, 30}, weights: 65.7407, ranks: 1},
	"synthetic-01-current-tp2-ready-esc-cr.txt":                   {version: "0.21.1", state: "ready", stage: "ready", shards: [2]int{4, 4}, weights: 75.0519, loadSeconds: 123.4, kvTokens: 1128064, ranks: 2},
	"synthetic-02-worker-died-then-oom-caret.txt":                 {state: "failed", stage: "weights", ranks: 1, failure: "oom", failLine: "GPU 3 has a total capacity"},
	"synthetic-03-worker-died.txt":                                {version: "0.10.1.1", state: "failed", stage: "starting", failure: "worker_died", failLine: "died unexpectedly"},
	"synthetic-04-glued-rsyslog-docker.txt":                       {version: "0.8.3", state: "ready", stage: "ready", shards: [2]int{2, 2}, weights: 7.3901, loadSeconds: 10.2, kvTokens: 4096, ranks: 2},
}

func TestFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) != len(fixtures) {
		t.Errorf("%d files in testdata, %d in the table: every fixture needs a row", len(files), len(fixtures))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := fixtures[name]
			if !ok {
				t.Fatalf("no expectations for %s", name)
			}
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			s, err := Read(fh)
			if err != nil {
				t.Fatal(err)
			}
			checkSummary(t, s, w)
		})
	}
}

func checkSummary(t *testing.T, s *Summary, w want) {
	t.Helper()
	if got := deref(s.Version); got != w.version {
		t.Errorf("version = %q, want %q", got, w.version)
	}
	if s.State != w.state || s.Stage != w.stage {
		t.Errorf("state/stage = %s/%s, want %s/%s", s.State, s.Stage, w.state, w.stage)
	}
	var sh [2]int
	if s.Shards != nil {
		sh = [2]int{s.Shards.Done, s.Shards.Total}
	}
	if sh != w.shards {
		t.Errorf("shards = %v, want %v", sh, w.shards)
	}
	if got := derefF(s.WeightsGiB); got != w.weights {
		t.Errorf("weights = %v, want %v", got, w.weights)
	}
	if got := derefF(s.LoadSeconds); got != w.loadSeconds {
		t.Errorf("load seconds = %v, want %v", got, w.loadSeconds)
	}
	var kv int64
	if s.KVCacheTokens != nil {
		kv = *s.KVCacheTokens
	}
	if kv != w.kvTokens {
		t.Errorf("kv tokens = %d, want %d", kv, w.kvTokens)
	}
	if len(s.Ranks) != w.ranks {
		t.Errorf("ranks = %d (%+v), want %d", len(s.Ranks), s.Ranks, w.ranks)
	}
	switch {
	case s.Failure == nil && w.failure != "":
		t.Errorf("no failure, want %s", w.failure)
	case s.Failure != nil && s.Failure.Kind != w.failure:
		t.Errorf("failure = %s (%s), want %q", s.Failure.Kind, s.Failure.Line, w.failure)
	case s.Failure != nil && !strings.Contains(s.Failure.Line, w.failLine):
		t.Errorf("failure line = %q, want it to contain %q", s.Failure.Line, w.failLine)
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefF(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// Feeding the same text in arbitrary chunks must give the same records as
// feeding it whole (lines arrive split across SSH reads).
func TestChunkingDoesNotMatter(t *testing.T) {
	b, err := os.ReadFile("testdata/synthetic-01-current-tp2-ready-esc-cr.txt")
	if err != nil {
		t.Fatal(err)
	}
	whole := New().Write(b)
	for _, size := range []int{1, 3, 7, 64} {
		p := New()
		var got []Record
		for i := 0; i < len(b); i += size {
			got = append(got, p.Write(b[i:min(i+size, len(b))])...)
		}
		got = append(got, p.Flush()...)
		if len(got) != len(whole) {
			t.Fatalf("chunk %d: %d records, whole: %d", size, len(got), len(whole))
		}
		for i := range got {
			if got[i].Kind != whole[i].Kind || got[i].Text != whole[i].Text {
				t.Fatalf("chunk %d record %d: %v %q, whole: %v %q", size, i, got[i].Kind, got[i].Text, whole[i].Kind, whole[i].Text)
			}
		}
	}
}

func TestLineShapes(t *testing.T) {
	cases := []struct {
		line  string
		kind  Kind
		rank  int
		check func(r Record) bool
	}{
		{"\x1b[1;36m(VllmWorker rank=2 pid=9)\x1b[0;0m INFO 03-27 16:21:51 [loader.py:429] Loading weights took 3.73 seconds", KindWeightsRead, 2,
			func(r Record) bool { return r.Seconds == 3.73 && r.PID == 9 }},
		{"(Worker_DP0_TP2_EP2 pid=5017) INFO 10-24 13:17:40 [gpu_model_runner.py:2860] Starting to load model /cache/x...", KindLoadStart, 2, nil},
		{"(Worker_PP1 pid=7) INFO 10-24 13:17:40 [x.py:1] Model loading took 12.5 GiB and 3.0 seconds", KindModelLoaded, 1,
			func(r Record) bool { return r.GiB == 12.5 && r.Seconds == 3 }},
		{"INFO 07-18 12:26:27 model_runner.py:1071] Loading model weights took 1.9028 GB", KindModelLoaded, -1,
			func(r Record) bool { return r.GiB == 1.9028 }},
		{"Loading safetensors checkpoint shards:  84% Completed | 136/161 [42:52<11:27, 27.50s/it]", KindShardBar, 0,
			func(r Record) bool {
				return r.Bar.Done == 136 && r.Bar.Total == 161 && r.Bar.SecPerIt == 27.5 && r.Bar.ElapsedS == 42*60+52 && r.Bar.RemainingS == 11*60+27
			}},
		{"Loading safetensors checkpoint shards:   0% Completed | 0/163 [00:00<?, ?it/s]", KindShardBar, 0,
			func(r Record) bool { return r.Bar.RemainingS == -1 && r.Bar.SecPerIt == 0 }},
		{"Loading safetensors checkpoint shards:  10% Completed | 5/50 [168:12:16<01:00,  4.00it/s]", KindShardBar, 0,
			func(r Record) bool { return r.Bar.ElapsedS == 168*3600+12*60+16 && r.Bar.SecPerIt == 0.25 }},
		{"(EngineCore_DP0 pid=15861) INFO 04-20 15:33:18 [kv_cache_utils.py:1307] GPU KV cache size: 1,128,064 tokens", KindKVCache, -1,
			func(r Record) bool { return r.Tokens == 1128064 }},
		{"(Worker_TP0 pid=1) INFO 04-20 15:33:18 [gpu_worker.py:356] Available KV cache memory: -3.5 GiB", KindKVMemory, 0,
			func(r Record) bool { return r.GiB == -3.5 }},
		{"INFO 08-02 15:41:30 model_runner.py:1219] Graph capturing finished in 13 secs.", KindGraphsDone, -1,
			func(r Record) bool { return r.Seconds == 13 }},
		{"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", KindReady, -1, nil},
		{"(EngineCore pid=127) INFO 04-15 13:42:25 [shm_broadcast.py:681] No available shared memory broadcast block found in 60 seconds. This typically happens", KindWatchdog, -1, nil},
		{"(VllmWorker rank=3 pid=1564) ERROR 08-06 10:40:29 [multiproc_executor.py:546] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.19 GiB of which 1.0 GiB is free", KindFailure, 3,
			func(r Record) bool { return r.Failure == FailOOM && r.Strong }},
		{"bruce-AI-Server:106022:106733 [1] NCCL INFO ncclCommInitRank comm 0x26a187b0 rank 1 nranks 2 - Init START", KindOther, -1, nil},
		{"[Gloo] Rank [Gloo] Rank 6 is connected to [Gloo] Rank 57 is connected to  peer ranks.", KindOther, -1, nil},
		{"INFO 02-14 08:23:25 llm_engine.py:429] init engine (profile, create kv cache, warmup model) took 15.79 seconds", KindEngineInit, -1, nil},
		{"(APIServer pid=1) INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.11.0", KindVersion, -1,
			func(r Record) bool { return r.Version == "0.11.0" }},
		{"INFO 10-28 11:14:51 llm_engine.py:1] Initializing an LLM engine (v0.6.1.dev238+ge2c6e0a82) with config: x", KindVersion, -1,
			func(r Record) bool { return r.Version == "0.6.1.dev238+ge2c6e0a82" }},
	}
	for _, c := range cases {
		recs := New().Line(c.line)
		if len(recs) != 1 {
			t.Errorf("%q: %d records", c.line, len(recs))
			continue
		}
		r := recs[0]
		if r.Kind != c.kind || r.Rank != c.rank {
			t.Errorf("%q: kind %v rank %d, want %v rank %d", c.line, r.Kind, r.Rank, c.kind, c.rank)
			continue
		}
		if c.check != nil && !c.check(r) {
			t.Errorf("%q: values wrong: %+v (bar %+v)", c.line, r, r.Bar)
		}
	}
}

// A bare prefix line followed by a bar attributes the bar to that rank; a
// bar glued to the next log line splits into both.
func TestPrefixThenBarAndGlue(t *testing.T) {
	p := New()
	if recs := p.Line("(Worker_DP0_TP0_EP0 pid=2238) "); len(recs) != 0 {
		t.Fatalf("bare prefix gave %d records", len(recs))
	}
	recs := p.Line("Loading safetensors checkpoint shards:  83% Completed | 133/161 [41:20<05:40, 12.18s/it]")
	if len(recs) != 1 || recs[0].Kind != KindShardBar || recs[0].PID != 2238 || recs[0].Rank != 0 {
		t.Fatalf("bar after prefix: %+v", recs)
	}
	recs = p.Line("Loading safetensors checkpoint shards:   0% 0/163 [00:00<?, ?it/s](VllmWorkerProcess pid=878) INFO 02-07 14:49:28 weight_utils.py:251] Using model weights format ['*.safetensors']")
	if len(recs) != 2 || recs[0].Kind != KindShardBar || recs[1].PID != 878 {
		t.Fatalf("glued: %+v", recs)
	}
	if recs[0].Bar.Total != 163 {
		t.Errorf("HPU bar total = %d", recs[0].Bar.Total)
	}
}

// Unknown text never fails and never claims progress.
func TestUnknownLinesAreNormal(t *testing.T) {
	for _, l := range []string{"", "   ", "random text", "\x00\x01\xff\xfe", "(Worker pid=) INFO", "INFO 99-99 99:99:99 [x.py:1]", strings.Repeat("x", 100000)} {
		for _, r := range New().Line(l) {
			if r.Kind != KindOther && r.Kind != KindWarning {
				t.Errorf("%.40q: kind %v", l, r.Kind)
			}
			if r.Progress() {
				t.Errorf("%.40q counted as progress", l)
			}
		}
	}
}

// A traceback's code line names the failure first; the exception line that
// follows is the evidence kept, and frames are not shown as warnings.
func TestTracebackEvidence(t *testing.T) {
	p, s := New(), NewSummary()
	for _, l := range []string{
		"(Worker_TP5 pid=9) ERROR 11-29 10:00:00 [multiproc_executor.py:750] Traceback (most recent call last):",
		`(Worker_TP5 pid=9) ERROR 11-29 10:00:00 [multiproc_executor.py:750]   File "/x/pynccl_wrapper.py", line 277, in ncclCommInitRank`,
		`(Worker_TP5 pid=9) ERROR 11-29 10:00:00 [multiproc_executor.py:750]     raise RuntimeError(f"NCCL error: {error_str}")`,
		"(Worker_TP5 pid=9) ERROR 11-29 10:00:00 [multiproc_executor.py:750] RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
	} {
		for _, r := range p.Line(l) {
			if r.Kind == KindWarning {
				t.Errorf("traceback body shown as a warning: %q", r.Msg)
			}
			s.Add(r)
		}
	}
	if s.Failure == nil || s.Failure.Kind != FailNCCL || !strings.Contains(s.Failure.Line, "RuntimeError: NCCL error: unhandled system error") {
		t.Fatalf("failure = %+v", s.Failure)
	}
}

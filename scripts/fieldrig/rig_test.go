// Package fieldrig_test runs the fieldrig decode server on the CPU (a tiny
// model, two ranks over gloo) and checks it with profdeck's own engines: the
// concurrency sweep, the vLLM log reader and the decode-step plan.
package fieldrig_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/model"
)

// torchPython finds a Python that imports torch and aiohttp: $FIELDRIG_PYTHON,
// python3, or Debian's /usr/bin/python3 (python3-torch, python3-aiohttp).
func torchPython(t *testing.T) string {
	t.Helper()
	cands := []string{os.Getenv("FIELDRIG_PYTHON"), "python3", "/usr/bin/python3"}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if err := exec.Command(c, "-c", "import torch, aiohttp").Run(); err == nil {
			return c
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Python with torch and aiohttp (apt-get install python3-torch python3-aiohttp, or set FIELDRIG_PYTHON)")
	}
	t.Skip("no Python with torch and aiohttp: install python3-torch and python3-aiohttp, or set FIELDRIG_PYTHON")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type rig struct {
	url, log, model string
}

// startRig writes the tiny checkpoint and starts the server at TP 2 on the CPU.
func startRig(t *testing.T, py string) rig {
	t.Helper()
	return startRigWith(t, py, "2")
}

// startRigWith starts the server at tp on the CPU with extra arguments.
func startRigWith(t *testing.T, py, tp string, extra ...string) rig {
	t.Helper()
	dir := t.TempDir()
	mdir := filepath.Join(dir, "model")
	if out, err := exec.Command(py, "prepare.py", "--preset", "tiny", "--out", mdir, "--shard-gib", "0.002").CombinedOutput(); err != nil {
		t.Fatalf("prepare: %v\n%s", err, out)
	}
	port, dport := freePort(t), freePort(t)
	logPath := filepath.Join(dir, "server.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve.py", "--model", mdir, "--served-model-name", "tiny", "--tp", tp, "--device", "cpu",
		"--port", fmt.Sprint(port), "--dist-port", fmt.Sprint(dport), "--max-num-seqs", "4", "--max-model-len", "96",
		"--profiler-dir", filepath.Join(dir, "prof")}, extra...)
	cmd := exec.Command(py, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		lf.Close()
	})
	r := rig{url: fmt.Sprintf("http://127.0.0.1:%d", port), log: logPath, model: mdir}
	deadline := time.Now().Add(120 * time.Second)
	for {
		resp, err := http.Get(r.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return r
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the rig did not become ready in 120 s; its log:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// truthBatch is one batch size of /truth.
type truthBatch struct {
	M              int                `json:"m"`
	EagerStepMs    float64            `json:"eager_step_ms"`
	AllReduceMs    float64            `json:"allreduce_ms"`
	AllReduceCount int                `json:"allreduce_count"`
	GatherMs       float64            `json:"gather_ms"`
	GEMMms         float64            `json:"gemm_ms"`
	GEMMCalls      map[string]int     `json:"gemm_calls_by_name"`
	GEMMByName     map[string]float64 `json:"gemm_ms_by_name"`
	RestMs         float64            `json:"rest_ms"`
	ServedStepMs   float64            `json:"served_step_ms"`
	ServedSteps    int                `json:"served_steps"`
	AllReduceRanks []float64          `json:"allreduce_ms_by_rank"`
}

type truthDoc struct {
	TP               int          `json:"tp"`
	AllReducePerStep int          `json:"allreduce_per_step"`
	Batch            []truthBatch `json:"batch"`
	Served           *struct {
		Requests         int            `json:"requests"`
		MedianTPOTms     float64        `json:"median_tpot_ms"`
		AllReducePerTok  float64        `json:"allreduce_ms_per_token"`
		GEMMPerTok       float64        `json:"gemm_ms_per_token"`
		RestPerTok       float64        `json:"rest_ms_per_token"`
		MeanPaddedBatch  float64        `json:"mean_padded_batch"`
		StepsByBatchSize map[string]int `json:"steps_by_batch"`
	} `json:"served"`
}

func TestRigOnCPU(t *testing.T) {
	py := torchPython(t)
	r := startRig(t, py)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The sweep: every request completes with exactly the asked tokens,
	// counted from the continuous usage.
	s, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: r.url, Concurrency: []int{1, 2, 4}, Requests: 4, Warmup: 1,
		InputLen: 24, OutputLen: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Continuous || res.PromptCal != "tokenize" {
		t.Errorf("continuous usage %v, prompt calibration %q: want true, tokenize", res.Continuous, res.PromptCal)
	}
	if len(res.Levels) != 3 {
		t.Fatalf("%d levels, want 3", len(res.Levels))
	}
	for _, lv := range res.Levels {
		if lv.Failed != 0 || lv.Completed < 4 {
			t.Errorf("C=%d: %d completed, %d failed %v", lv.Concurrency, lv.Completed, lv.Failed, lv.Failures)
		}
		if lv.TotalOutputTokens != int64(8*lv.Completed) {
			t.Errorf("C=%d: %d output tokens for %d requests of 8", lv.Concurrency, lv.TotalOutputTokens, lv.Completed)
		}
		if lv.MedianTPOTms <= 0 || lv.MedianTTFTms <= 0 {
			t.Errorf("C=%d: TPOT %.2f ms, TTFT %.2f ms", lv.Concurrency, lv.MedianTPOTms, lv.MedianTTFTms)
		}
	}

	// /truth: the step's collectives and GEMMs are those of profdeck's plan.
	cfg, err := model.LoadFile(filepath.Join(r.model, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := model.Build(cfg, model.Options{TP: 2, Batch: []int{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(r.url + "/truth?m=1,4&reps=2")
	if err != nil {
		t.Fatal(err)
	}
	var doc truthDoc
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/truth: HTTP %d, %v", resp.StatusCode, err)
	}
	// The asked sizes and those the sweep's requests decoded at (1, 2, 4).
	if doc.TP != 2 || doc.AllReducePerStep != plan.AllReduce.PerStep || len(doc.Batch) != 3 || doc.Batch[0].M != 1 || doc.Batch[2].M != 4 {
		t.Fatalf("/truth: tp %d, %d all-reduces per step (plan %d), batch sizes %+v", doc.TP, doc.AllReducePerStep, plan.AllReduce.PerStep, doc.Batch)
	}
	sv := doc.Served
	if sv == nil || sv.Requests < 12 || sv.MedianTPOTms <= 0 || sv.AllReducePerTok <= 0 || sv.GEMMPerTok <= 0 || sv.MeanPaddedBatch < 1 || len(sv.StepsByBatchSize) == 0 {
		t.Errorf("/truth served window: %+v", sv)
	}
	for _, b := range doc.Batch {
		if b.M == 2 {
			continue // the plan was built for 1 and 4
		}
		if b.AllReduceCount != plan.AllReduce.PerStep {
			t.Errorf("M=%d: %d all-reduces timed, the plan has %d", b.M, b.AllReduceCount, plan.AllReduce.PerStep)
		}
		want := map[string]int{}
		for _, g := range plan.At(b.M) {
			name, _, _ := strings.Cut(g.Name, ".m") // experts.w13.m2 → experts.w13
			if strings.HasPrefix(g.Name, "experts.") {
				want[name] = g.PerStep
			} else {
				want[g.Name] += g.PerStep
			}
		}
		for name, n := range want {
			if b.GEMMCalls[name] != n {
				t.Errorf("M=%d %s: %d calls per step, the plan has %d", b.M, name, b.GEMMCalls[name], n)
			}
		}
		if len(b.GEMMCalls) != len(want) {
			t.Errorf("M=%d: GEMMs %v, the plan's %v", b.M, b.GEMMCalls, want)
		}
		if b.EagerStepMs <= 0 || b.AllReduceMs <= 0 || b.GEMMms <= 0 || len(b.AllReduceRanks) != 2 {
			t.Errorf("M=%d: step %.3f, all-reduce %.3f, GEMM %.3f ms, ranks %v", b.M, b.EagerStepMs, b.AllReduceMs, b.GEMMms, b.AllReduceRanks)
		}
		if d := b.EagerStepMs - b.AllReduceMs - b.GatherMs - b.GEMMms - b.RestMs; d > 1e-3 || d < -1e-3 {
			t.Errorf("M=%d: the parts do not add up to the step (%.4f ms off)", b.M, d)
		}
	}
	if doc.Batch[0].ServedSteps == 0 || doc.Batch[0].ServedStepMs <= 0 {
		t.Errorf("M=1: no served decode steps recorded (%d, %.3f ms)", doc.Batch[0].ServedSteps, doc.Batch[0].ServedStepMs)
	}

	// A client that leaves mid-stream stops its decoding (as vLLM aborts it).
	sctx, scancel := context.WithCancel(ctx)
	body := strings.NewReader(`{"model":"tiny","prompt":"a b c","max_tokens":80,"stream":true}`)
	req, _ := http.NewRequestWithContext(sctx, http.MethodPost, r.url+"/v1/completions", body)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sresp.Body.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	scancel()
	sresp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for running := ""; running != "0.0"; {
		if time.Now().After(deadline) {
			t.Fatalf("a left stream still decodes: vllm:num_requests_running %s", running)
		}
		time.Sleep(100 * time.Millisecond)
		mresp, err := http.Get(r.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		mb, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		for _, line := range strings.Split(string(mb), "\n") {
			if strings.HasPrefix(line, "vllm:num_requests_running{") {
				running = line[strings.LastIndex(line, " ")+1:]
			}
		}
	}

	// The load log reads as vLLM's: every shard, the weights, the KV cache, ready.
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := vllmlog.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Shards == nil || sum.Shards.Done != sum.Shards.Total || sum.LoadSeconds == nil || sum.KVCacheTokens == nil || *sum.KVCacheTokens != 4*96 || sum.State != "ready" || len(sum.Ranks) != 2 {
		js, _ := json.Marshal(sum)
		t.Errorf("log summary: %s\nlog:\n%s", js, b)
	}
}

// The /truth documents of the 2×H200 run that README.md quotes: the decode
// step at M=1 and M=128, and the served window at the plateau.
func TestRecordedTruthOnH200(t *testing.T) {
	read := func(name string) truthDoc {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var d truthDoc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	at := func(d truthDoc, m int) truthBatch {
		for _, b := range d.Batch {
			if b.M == m {
				return b
			}
		}
		t.Fatalf("no M=%d", m)
		return truthBatch{}
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if got < want-0.0006 || got > want+0.0006 {
			t.Errorf("%s = %.4f, want %.4f", what, got, want)
		}
	}
	c1, c128 := read("h200x2-truth-c1.json"), read("h200x2-truth-c128.json")
	if c1.TP != 2 || c1.AllReducePerStep != 13 {
		t.Fatalf("tp %d, %d all-reduces per step", c1.TP, c1.AllReducePerStep)
	}
	m1 := at(c1, 1)
	near("M=1 all-reduce", m1.AllReduceMs, 0.1451)
	near("M=1 GEMM", m1.GEMMms, 1.8123)
	m128 := at(c128, 128)
	near("M=128 all-reduce", m128.AllReduceMs, 0.4581)
	near("M=128 GEMM", m128.GEMMms, 5.9175)
	sv := c128.Served
	if sv == nil {
		t.Fatal("no served window at C=128")
	}
	near("C=128 TPOT", sv.MedianTPOTms, 26.7815)
	near("C=128 all-reduce per token", sv.AllReducePerTok, 0.4448)
	near("C=128 GEMM per token", sv.GEMMPerTok, 5.875)
	if sv.StepsByBatchSize["128"] != 29036 || sv.MeanPaddedBatch < 123 {
		t.Errorf("C=128 window: %d steps at 128, mean padded batch %.2f", sv.StepsByBatchSize["128"], sv.MeanPaddedBatch)
	}
}

// waitDoc is the part of /truth that splits each served token's wait.
type waitDoc struct {
	Prefill string `json:"prefill"`
	Served  *struct {
		Requests   int                `json:"requests"`
		MeanTPOTms float64            `json:"mean_tpot_ms"`
		Mixed      map[string]int     `json:"mixed_steps_by_batch"`
		Wait       map[string]float64 `json:"wait_ms_per_token"`
	} `json:"served"`
}

// With chunked prefill (prompts of 24 tokens, 12 tokens per step), prefill
// chunks ride in the decode steps: /truth splits each served token's wait
// into the decode step, the chunks' share of mixed steps and scheduling,
// and the parts add up to the period, whose mean over requests is the mean
// TPOT. The engine's counters hold every prompt token.
func TestRigChunkedPrefillOnCPU(t *testing.T) {
	py := torchPython(t)
	r := startRigWith(t, py, "1", "--chunked-prefill", "--max-num-batched-tokens", "12")
	res, doc := sweepThenTruth(t, r, 3, 9, 24, 10, 1)
	if lv := res.Levels[0]; lv.Failed != 0 || lv.TotalOutputTokens != int64(10*lv.Completed) {
		t.Fatalf("level: %d completed, %d failed, %d tokens", lv.Completed, lv.Failed, lv.TotalOutputTokens)
	}
	w := doc.Served.Wait
	if !strings.HasPrefix(doc.Prefill, "chunked") || doc.Served.Requests < 9 || len(doc.Served.Mixed) == 0 {
		t.Errorf("prefill %q, %d requests, mixed steps %v", doc.Prefill, doc.Served.Requests, doc.Served.Mixed)
	}
	if w["prefill_in_mixed_steps"] <= 0 || w["prefill_between_steps"] != 0 || w["decode_step"] <= 0 {
		t.Errorf("wait split %v", w)
	}
	if sum := w["decode_step"] + w["prefill"] + w["scheduling"]; sum < w["period"]*0.999 || sum > w["period"]*1.001 {
		t.Errorf("parts %.3f, period %.3f", sum, w["period"])
	}
	if p := w["period"]; p < doc.Served.MeanTPOTms*0.99 || p > doc.Served.MeanTPOTms*1.01 {
		t.Errorf("period %.3f ms, mean TPOT %.3f ms", p, doc.Served.MeanTPOTms)
	}
	// Every request the server finished (the sweep's own and its probe)
	// had its 24 prompt tokens prefilled, chunk by chunk.
	body := getText(t, r.url+"/metrics")
	var done, prompt float64
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch {
		case strings.HasPrefix(line, "vllm:request_success_total{"):
			fmt.Sscan(f[1], &done)
		case strings.HasPrefix(line, "vllm:prompt_tokens_total{"):
			fmt.Sscan(f[1], &prompt)
		}
	}
	if done < 9 || prompt != 24*done {
		t.Errorf("%v requests finished, %v prompt tokens counted", done, prompt)
	}
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// With whole prefills between decode steps, the rig prefills a pass's
// prompts one after another and sends their first tokens together at the
// pass's end, as a client receives them. The time a request's first token
// waited for the prompts prefilled after its own is TTFT, so /truth's mean
// TPOT and prefill wait are those the client measured: the sweep's own
// TPOT and the stall it saw (token gaps that held another request's first
// token) agree with /truth for the same requests.
func TestRigSeparateFirstTokensAtPassEnd(t *testing.T) {
	py := torchPython(t)
	r := startRigWith(t, py, "1")
	res, doc := sweepThenTruth(t, r, 4, 24, 64, 16, 3)
	lv := res.Levels[0]
	if lv.Failed != 0 || lv.PrefillWait == nil {
		t.Fatalf("level: %d completed, %d failed, prefill wait %+v", lv.Completed, lv.Failed, lv.PrefillWait)
	}
	w := doc.Served.Wait
	t.Logf("client: mean TPOT %.3f ms, stall %.3f ms per token; /truth: mean TPOT %.3f ms, prefill %.3f ms per token",
		lv.MeanTPOTms, lv.PrefillWait.StallMsPerToken, doc.Served.MeanTPOTms, w["prefill"])
	if d := doc.Served.MeanTPOTms/lv.MeanTPOTms - 1; math.Abs(d) > 0.05 {
		t.Errorf("/truth's mean TPOT %.3f ms against the client's %.3f ms (%+.0f%%)", doc.Served.MeanTPOTms, lv.MeanTPOTms, 100*d)
	}
	if d := w["prefill"] - lv.PrefillWait.StallMsPerToken; math.Abs(d) > 0.15*lv.MeanTPOTms {
		t.Errorf("/truth's prefill wait %.3f ms per token against the client's stall %.3f ms", w["prefill"], lv.PrefillWait.StallMsPerToken)
	}
}

// sweepThenTruth resets the rig's served figures, sweeps one level of c
// (n requests, no warm-up, in prompt and out output tokens) and reads
// /truth for the requests just served.
func sweepThenTruth(t *testing.T, r rig, c, n, in, out int, seed int64) (*macro.Result, waitDoc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if resp, err := http.Post(r.url+"/truth/reset_served", "application/json", nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	s, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: r.url, Concurrency: []int{c}, Requests: n, Warmup: 0, InputLen: in, OutputLen: out, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(r.url + "/truth?m=1&reps=1")
	if err != nil {
		t.Fatal(err)
	}
	var doc waitDoc
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Served == nil || doc.Served.Wait == nil {
		t.Fatalf("/truth: %v %+v", err, doc)
	}
	return res, doc
}

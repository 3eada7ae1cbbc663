package load

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
)

func gpus(n int, gib float64) []smi.GPU {
	out := make([]smi.GPU, n)
	for i := range out {
		used, total, util := gib*1024, 143771.0, 50.0
		out[i] = smi.GPU{Index: i, Name: "NVIDIA H200", MemoryUsedMiB: &used, MemoryTotalMiB: &total, UtilizationPct: &util}
	}
	return out
}

func feed(tr *Tracker, now time.Time, line string) {
	for _, r := range vllmlog.New().Line(line) {
		tr.Record(now, r)
	}
}

// A load that grows to 75.8 GiB on 8 GPUs and stops: after the configured
// silence the tracker reports one stall naming all eight GPUs and the
// memory, and none before.
func TestStallWithFakeClock(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tr := NewTracker("sim", 100, 5*time.Minute, t0)
	now := t0
	feed(tr, now, "(Worker_TP0 pid=1) INFO 11-29 10:00:00 [gpu_model_runner.py:1] Starting to load model x...")
	for gib := 0.0; gib <= 75.8; gib += 1.0 {
		tr.Sample(now, gpus(8, gib))
		now = now.Add(time.Second)
	}
	tr.Sample(now, gpus(8, 75.8))
	stopAt := now
	for now.Sub(stopAt) < 5*time.Minute-time.Second {
		now = now.Add(time.Second)
		tr.Sample(now, gpus(8, 75.8))
		if st := tr.CheckStall(now); st != nil {
			t.Fatalf("stall after only %v: %+v", now.Sub(stopAt), st)
		}
	}
	now = now.Add(2 * time.Second)
	tr.Sample(now, gpus(8, 75.81)) // a wobble of 10 MiB is not progress
	st := tr.CheckStall(now)
	if st == nil {
		t.Fatal("no stall after 5 minutes of silence")
	}
	if len(st.GPUs) != 8 || st.MemoryGiB[3] != 75.8 || st.ForS < 300 {
		t.Fatalf("stall = %+v", st)
	}
	if text := StallText(st); !strings.Contains(text, "STALLED at 75.8 GiB on GPUs 0-7 for 5 min") {
		t.Errorf("stall text = %q", text)
	}
	if again := tr.CheckStall(now.Add(time.Minute)); again != nil {
		t.Error("the same stall was reported twice")
	}
	if s := tr.State(now.Add(12 * time.Minute)); s.Stall == nil || StallText(s.Stall) == "" {
		t.Error("state lost the stall")
	}
	// Progress resumes: the stall clears.
	now = now.Add(13 * time.Minute)
	tr.Sample(now, gpus(8, 77))
	if s := tr.State(now); s.Stall != nil {
		t.Errorf("stall still set after growth: %+v", s.Stall)
	}
	if st := tr.CheckStall(now.Add(12 * time.Minute)); st == nil || !strings.Contains(StallText(st), "for 12 min") {
		t.Errorf("second stall: %+v", st)
	}
}

// A slow bar (30 s per shard) raises the threshold to 5× that.
func TestStallThresholdFollowsTheBar(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTracker("h", 0, time.Minute, t0)
	feed(tr, t0, "Loading safetensors checkpoint shards:  26% Completed | 22/85 [09:23<29:54, 28.49s/it]")
	if st := tr.CheckStall(t0.Add(2 * time.Minute)); st != nil {
		t.Fatalf("stalled at 2 min with a 28.5 s/shard bar: %+v", st)
	}
	if st := tr.CheckStall(t0.Add(143 * time.Second)); st == nil {
		t.Fatal("no stall after 5 × 28.49 s")
	}
	// The same bar line printed again is not progress; a new shard is.
	tr2 := NewTracker("h", 0, time.Minute, t0)
	feed(tr2, t0, "Loading safetensors checkpoint shards:  26% Completed | 22/85 [09:23<29:54, 1.00s/it]")
	feed(tr2, t0.Add(50*time.Second), "Loading safetensors checkpoint shards:  26% Completed | 22/85 [09:23<29:54, 1.00s/it]")
	if st := tr2.CheckStall(t0.Add(61 * time.Second)); st == nil {
		t.Fatal("a repeated bar line reset the stall clock")
	}
}

// Nothing is a stall once ready, after a failure, while stopped, or before
// anything started.
func TestNoStallWhenNotLoading(t *testing.T) {
	t0 := time.Unix(0, 0)
	late := t0.Add(time.Hour)
	idle := NewTracker("h", 0, time.Minute, t0)
	if idle.CheckStall(late) != nil {
		t.Error("stall before any load started")
	}
	ready := NewTracker("h", 0, time.Minute, t0)
	ready.Sample(t0, gpus(2, 10))
	ready.Sample(t0.Add(time.Second), gpus(2, 20))
	if ms := ready.SetReady(t0.Add(2 * time.Second)); ms == nil || ms.Stage != "ready" {
		t.Errorf("ready milestone = %+v", ms)
	}
	if ready.CheckStall(late) != nil {
		t.Error("stall after ready")
	}
	failed := NewTracker("h", 0, time.Minute, t0)
	feed(failed, t0, "(Worker_TP3 pid=4) ERROR 11-29 10:01:00 [x.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 139.72 GiB")
	if f := failed.Failure(); f == nil || f.Kind != "oom" || f.Rank != 3 {
		t.Errorf("failure = %+v", f)
	}
	if failed.CheckStall(late) != nil {
		t.Error("stall after a failure")
	}
	stopped := NewTracker("h", 0, time.Minute, t0)
	stopped.Sample(t0, gpus(2, 10))
	stopped.Sample(t0.Add(time.Second), gpus(2, 20))
	stopped.SetStopped(t0.Add(2*time.Second), true)
	if stopped.CheckStall(late) != nil {
		t.Error("stall while stopped")
	}
	if s := stopped.State(late); s.Stage != "stopped" {
		t.Errorf("stage = %s", s.Stage)
	}
}

// A launch whose log holds only lines vLLM's logger did not write (a
// shell's error, a usage text) and then nothing is a stall once the
// threshold passes: the configured stall_after holds for it too.
func TestStallAfterPlainLines(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTracker("h", 0, time.Minute, t0)
	feed(tr, t0, "sh: 1: vlm: not found")
	if tr.CheckStall(t0.Add(59*time.Second)) != nil {
		t.Error("stall before the threshold")
	}
	st := tr.CheckStall(t0.Add(61 * time.Second))
	if st == nil || st.ForS < 60 {
		t.Fatalf("no stall a minute after the launch's last line: %+v", st)
	}
}

// Rate, ETA and the share of the expected weights.
func TestRateAndETA(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTracker("h", 74.9, 5*time.Minute, t0)
	now := t0
	for i := 0; i <= 30; i++ { // 2 GiB per second for 30 s → 120 GiB/min
		tr.Sample(now, gpus(1, float64(i)*0.5))
		now = now.Add(time.Second)
	}
	s := tr.State(now)
	g := s.GPUs[0]
	if g.UsedGiB != 15 || g.ExpectedGiB != 74.9 || g.ExpectFrom != "campaign" {
		t.Fatalf("gpu = %+v", g)
	}
	if g.RateGiBMin < 29.9 || g.RateGiBMin > 30.1 {
		t.Errorf("rate = %v GiB/min, want 30", g.RateGiBMin)
	}
	if g.ETASeconds < 119 || g.ETASeconds > 121 { // (74.9-15)/30 min = 119.8 s
		t.Errorf("ETA = %v s, want ~120", g.ETASeconds)
	}
	// Without a hint, the log's weights become the expectation.
	tr2 := NewTracker("h", 0, 5*time.Minute, t0)
	tr2.Sample(t0, gpus(1, 30))
	feed(tr2, t0, "(Worker_TP0 pid=1) INFO 11-29 10:02:13 [gpu_model_runner.py:3549] Model loading took 27.8072 GiB memory and 495.846125 seconds")
	if g := tr2.State(t0).GPUs[0]; g.ExpectedGiB != 27.81 || g.ExpectFrom != "log" {
		t.Errorf("from log: %+v", g)
	}
	// Without either, the plateau after a minute of no growth.
	tr3 := NewTracker("h", 0, 5*time.Minute, t0)
	tr3.Sample(t0, gpus(1, 0))
	tr3.Sample(t0.Add(time.Second), gpus(1, 40))
	if g := tr3.State(t0.Add(2 * time.Second)).GPUs[0]; g.ExpectedGiB != 0 {
		t.Errorf("plateau too early: %+v", g)
	}
	tr3.Sample(t0.Add(62*time.Second), gpus(1, 40))
	if g := tr3.State(t0.Add(62 * time.Second)).GPUs[0]; g.ExpectedGiB != 40 || g.ExpectFrom != "plateau" {
		t.Errorf("plateau: %+v", g)
	}
}

// Unknown memory stays unknown.
func TestUnknownMemory(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTracker("h", 0, 5*time.Minute, t0)
	util := 5.0
	tr.Sample(t0, []smi.GPU{{Index: 0, Name: "NVIDIA GB10", UtilizationPct: &util}})
	g := tr.State(t0).GPUs[0]
	if g.Known || g.UsedGiB != 0 || !g.UtilKnown {
		t.Errorf("%+v", g)
	}
}

func TestGPUListAndDuration(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{[]int{3}, "GPU 3"}, {[]int{0, 1, 2, 3, 4, 5, 6, 7}, "GPUs 0-7"}, {[]int{0, 1, 2, 5}, "GPUs 0-2,5"}, {[]int{1, 3}, "GPUs 1,3"}} {
		if got := GPUList(c.in); got != c.want {
			t.Errorf("GPUList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if units.Duration(45) != "45 s" || units.Duration(720) != "12 min" || units.Duration(3900) != "1 h 05 min" {
		t.Error("FormatDuration")
	}
}

func TestProfilerArgs(t *testing.T) {
	f, env := ProfilerArgs("0.12.0", "/p")
	if f != nil || env["VLLM_TORCH_PROFILER_DIR"] != "/p" {
		t.Errorf("0.12: %v %v", f, env)
	}
	f, env = ProfilerArgs("0.13.1", "/p")
	if len(f) != 2 || f[0] != "--profiler-config" || f[1] != `{"profiler":"torch","torch_profiler_dir":"/p"}` || env != nil {
		t.Errorf("0.13: %v %v", f, env)
	}
	if f, _ := ProfilerArgs("", "/p"); len(f) != 2 {
		t.Errorf("unknown version: %v", f)
	}
	if f, env := ProfilerArgs("0.6.1.dev238+ge2c6e0a82", "/p"); f != nil || env["VLLM_TORCH_PROFILER_DIR"] == "" {
		t.Errorf("dev: %v %v", f, env)
	}
}

func TestLaunchCommandQuoting(t *testing.T) {
	s := &Server{Settings: campaignServer("vllm serve m --tp 8", map[string]string{"A": "x y"})}
	cmd, err := s.LaunchCommand([]string{"--profiler-config", `{"a":"b c"}`}, map[string]string{"B": "it's"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `vllm serve m --tp 8 --profiler-config '{"a":"b c"}'`; cmd != want {
		t.Errorf("got  %s\nwant %s", cmd, want)
	}
	env, _ := s.launchEnv(map[string]string{"B": "it's"})
	if got, want := string(envFileText(env)), "A='x y'\nB='it'\\''s'\n"; got != want {
		t.Errorf("environment file %q, want %q", got, want)
	}
	s.Settings.Launch = "docker run --name vllm img --model m"
	cmd, _ = s.LaunchCommand(nil, map[string]string{"VLLM_TORCH_PROFILER_DIR": "/p"})
	if cmd != "docker run -e A -e VLLM_TORCH_PROFILER_DIR --name vllm img --model m" {
		t.Errorf("docker: %s", cmd)
	}
	if _, err := s.LaunchCommand(nil, map[string]string{"bad name": "x"}); err == nil {
		t.Error("a bad variable name was accepted")
	}
	s.Settings.Launch = ""
	if _, err := s.LaunchCommand(nil, nil); err == nil || !strings.Contains(err.Error(), "server.launch") {
		t.Errorf("no launch: %v", err)
	}
}

func campaignServer(launch string, env map[string]string) Settings {
	return Settings{Launch: launch, Env: env}
}

// SGLang takes its profiler's directory from the environment, whatever the
// vLLM version known; vLLM's engine keeps its own rule.
func TestProfilerArgsFor(t *testing.T) {
	f, env := ProfilerArgsFor("sglang", "0.13.0", "/p")
	if f != nil || len(env) != 1 || env["SGLANG_TORCH_PROFILER_DIR"] != "/p" {
		t.Errorf("sglang: %v %v", f, env)
	}
	if f, env := ProfilerArgsFor("auto", "0.12.0", "/p"); f != nil || env["VLLM_TORCH_PROFILER_DIR"] != "/p" {
		t.Errorf("auto at 0.12: %v %v", f, env)
	}
}

// TestRuntimeFailure: a failure after the server was ready is a run-time
// failure of the part the log blames, not a start-up one.
func TestRuntimeFailure(t *testing.T) {
	t0 := time.Unix(0, 0)
	tr := NewTracker("h", 0, time.Minute, t0)
	p := vllmlog.New()
	for _, line := range []string{
		"(APIServer pid=1) INFO 11-04 09:40:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
		"ERROR 11-04 09:45:23 [core.py:588] EngineCore encountered a fatal error.",
	} {
		for _, r := range p.Line(line) {
			tr.Record(t0, r)
		}
	}
	if f := tr.Failure(); f == nil || f.When != "serving" || f.Component != "engine_core" {
		t.Errorf("failure = %+v, want the engine core failing while serving", f)
	}
}

package load_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// collect drains events into a list until the returned stop is called.
func collect(t *testing.T) (*phases.Emitter, func() []phases.Event) {
	ch := make(chan phases.Event, 4096)
	var mu sync.Mutex
	var evs []phases.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}
	}()
	return &phases.Emitter{Out: ch}, func() []phases.Event {
		close(ch)
		<-done
		return evs
	}
}

func startSim(t *testing.T, opt sim.Options) *sim.Deployment {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := sim.Start(ctx, opt)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); cancel() })
	return d
}

func kinds(evs []phases.Event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[e.Kind]++
	}
	return m
}

// A simulated 8-GPU load runs to ready: the watcher emits samples, states,
// milestones in order and the ready server event, and Until ends "ready".
func TestWatcherSimReady(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true})
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := load.NewWatcher(load.Complete(load.Config{Host: d, LogPath: d.LogPath(), HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, ExpectGiB: sim.DefaultWeightsGiB}))
	end, err := w.Until(ctx, em)
	evs := stop()
	if err != nil {
		t.Fatal(err)
	}
	if end.Kind != load.EndReady {
		t.Fatalf("ending = %+v", end)
	}
	k := kinds(evs)
	if k[phases.KindLoadGPU] == 0 || k[phases.KindLoadState] == 0 || k[phases.KindLoadGPUCoarse] == 0 {
		t.Errorf("missing samples: %v", k)
	}
	// One notebook run, opened when the load showed life, closed at ready.
	if k[phases.KindSessionPhaseStarted] != 1 || k[phases.KindSessionPhaseFinished] != 1 {
		t.Errorf("phase brackets: %v", k)
	}
	for _, e := range evs {
		if pf, ok := e.Data.(phases.PhaseFinished); ok && (pf.Name != phases.Load || pf.Err != "") {
			t.Errorf("finished = %+v", pf)
		}
	}
	var stages []string
	var last phases.LoadState
	for _, e := range evs {
		switch v := e.Data.(type) {
		case phases.Milestone:
			stages = append(stages, v.Stage)
		case phases.LoadState:
			last = v
		}
	}
	joined := strings.Join(stages, ",")
	for _, want := range []string{"weights", "ready"} {
		if !strings.Contains(joined, want) {
			t.Errorf("milestones %s lack %s", joined, want)
		}
	}
	if len(last.GPUs) != 8 || last.GPUs[3].UsedGiB < 70 {
		t.Errorf("last state GPUs: %+v", last.GPUs)
	}
}

// The demo's story: the load stops at 75.8 GiB; the watcher reports a stall
// naming the GPUs and the memory.
func TestWatcherSimStall(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, StallAtGiB: 75.8, WeightsGiB: 90})
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := load.NewWatcher(load.Complete(load.Config{Host: d, LogPath: d.LogPath(), HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, StallAfter: 2 * time.Second}))
	end, err := w.Until(ctx, em)
	evs := stop()
	if err != nil {
		t.Fatal(err)
	}
	if end.Kind != load.EndStalled || !strings.Contains(end.Reason, "STALLED at 75.8 GiB on GPUs 0-7") {
		t.Fatalf("ending = %+v", end)
	}
	if kinds(evs)[phases.KindLoadStall] != 1 {
		t.Errorf("stall events: %v", kinds(evs))
	}
	for _, e := range evs {
		if pf, ok := e.Data.(phases.PhaseFinished); ok && !strings.HasPrefix(pf.Err, "stalled: STALLED at 75.8") {
			t.Errorf("finished = %+v", pf)
		}
	}
}

// A simulated OOM ends "failed" with the OOM evidence line.
func TestWatcherSimOOM(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, FailWith: "oom"})
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := load.NewWatcher(load.Complete(load.Config{Host: d, LogPath: d.LogPath(), HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond}))
	end, err := w.Until(ctx, em)
	evs := stop()
	if err != nil {
		t.Fatal(err)
	}
	if end.Kind != load.EndFailed || !strings.HasPrefix(end.Reason, "oom: ") || !strings.Contains(end.Reason, "out of memory") {
		t.Fatalf("ending = %+v", end)
	}
	if kinds(evs)[phases.KindLoadFailure] == 0 {
		t.Error("no failure event")
	}
}

// Start, stop (waiting for the memory to be released) and restart with the
// profiler, on the simulated host.
func TestServerLifecycleSim(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	em, stop := collect(t)
	s := &load.Server{Host: d, Emitter: em, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2,
		Settings: load.Settings{Launch: "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8", Log: d.LogPath()}}
	pid, err := s.Start(ctx, nil, nil)
	if err != nil || pid <= 0 {
		t.Fatalf("start: %d %v", pid, err)
	}
	if _, err := s.Start(ctx, nil, nil); err == nil {
		t.Error("a second start while running was accepted")
	}
	sshtest.WaitFor(t, 10*time.Second, "the simulated server to be ready", d.Ready)
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d.ServerRunning() {
		t.Error("server still running after stop")
	}
	for _, g := range d.GPUs() {
		if g.MemUsedMiB > 2048 {
			t.Errorf("GPU %d still holds %d MiB after stop", g.Index, g.MemUsedMiB)
		}
	}
	flags, env := load.ProfilerArgs("0.21", "/tmp/prof")
	if _, err := s.Restart(ctx, flags, env); err != nil {
		t.Fatalf("restart: %v", err)
	}
	sshtest.WaitFor(t, 10*time.Second, "the simulated server to run", d.ServerRunning)
	if !d.ProfilerEnabled() {
		t.Error("restart with --profiler-config did not enable the profiler")
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	evs := stop()
	var actions []string
	for _, e := range evs {
		if v, ok := e.Data.(phases.ServerEvent); ok {
			actions = append(actions, v.Action)
		}
	}
	if got := strings.Join(actions, ","); got != "start,stop,stopped,restart,start,stop,stopped" {
		t.Errorf("server events = %s", got)
	}
}

// A server in a docker container: the environment goes in as -e, and stop
// is `docker stop NAME`.
func TestServerLifecycleDockerSim(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 1 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	s := &load.Server{Host: d, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{
		Launch:    "docker run --name vllm --gpus all vllm/vllm-openai:v0.12.0 --model moonshotai/Kimi-K2.5 -tp 8",
		Container: "vllm", Log: d.LogPath()}}
	if _, err := s.Start(ctx, nil, nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	sshtest.WaitFor(t, 10*time.Second, "the simulated server to be ready", d.Ready)
	flags, env := load.ProfilerArgs("0.12.0", "/prof")
	if _, err := s.Restart(ctx, flags, env); err != nil {
		t.Fatalf("restart: %v", err)
	}
	sshtest.WaitFor(t, 10*time.Second, "the simulated server to run", d.ServerRunning)
	if !d.ProfilerEnabled() {
		t.Error("docker run -e VLLM_TORCH_PROFILER_DIR did not enable the profiler")
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d.ServerRunning() {
		t.Error("running after docker stop")
	}
}

// The simulated deployment playing SGLang loads to ready; the watcher
// tells the engine from the log by itself and reads its stages and sizes.
func TestWatcherSimSGLang(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, Engine: sim.EngineSGLang})
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := load.NewWatcher(load.Complete(load.Config{Host: d, LogPath: d.LogPath(), HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, ExpectGiB: sim.DefaultWeightsGiB}))
	end, err := w.Until(ctx, em)
	evs := stop()
	if err != nil || end.Kind != load.EndReady {
		t.Fatalf("ending %+v, %v; want ready", end, err)
	}
	var last phases.LoadState
	stages := map[string]bool{}
	for _, e := range evs {
		switch v := e.Data.(type) {
		case phases.LoadState:
			last = v
		case phases.Milestone:
			stages[v.Stage] = true
		}
	}
	if last.Engine != "sglang" || last.KVCacheTokens != 1<<18 || last.WeightsGiB < 70 || last.ShardsTotal != 64 {
		t.Errorf("last state: engine %q, KV %d tokens, weights %.1f GiB, %d shards; want sglang, 262144, ~74, 64",
			last.Engine, last.KVCacheTokens, last.WeightsGiB, last.ShardsTotal)
	}
	if line := load.StatusLine(last); !strings.HasPrefix(line, "SGLang ") {
		t.Errorf("status line %q; want it to name SGLang", line)
	}
	for _, st := range []string{"weights", "kv_cache", "cuda_graphs", "ready"} {
		if !stages[st] {
			t.Errorf("no %s milestone (got %v)", st, stages)
		}
	}
}

// An SGLang load that runs out of memory allocating its KV pool fails
// with the kind and stage its traceback shows.
func TestWatcherSimSGLangOOM(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, Engine: sim.EngineSGLang, FailWith: "oom"})
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w := load.NewWatcher(load.Complete(load.Config{Host: d, LogPath: d.LogPath(), HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, Engine: "sglang"}))
	end, err := w.Until(ctx, em)
	evs := stop()
	if err != nil || end.Kind != load.EndFailed {
		t.Fatalf("ending %+v, %v; want failed", end, err)
	}
	var fail *phases.LoadFailure
	for _, e := range evs {
		if v, ok := e.Data.(phases.LoadFailure); ok {
			fail = &v // the root cause follows the scheduler's death
		}
	}
	if fail == nil || fail.Kind != "oom" || fail.Rank != 3 {
		t.Fatalf("last failure %+v; want oom on rank 3", fail)
	}
}

type countFollower struct{ started, stopped atomic.Int32 }

func (f *countFollower) MarkStarted() { f.started.Add(1) }
func (f *countFollower) MarkStopped() { f.stopped.Add(1) }

// One Server shared by two callers: each call's events go to the emitter
// of its context (nothing is rewired on the Server), the Server's own
// emitter takes the rest, and every follower hears every launch and stop.
func TestServerSharedEmittersAndFollowers(t *testing.T) {
	t.Parallel()
	d := startSim(t, sim.Options{LoadTime: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	own, stopOwn := collect(t)
	mine, stopMine := collect(t)
	s := &load.Server{Host: d, Emitter: own, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2,
		Settings: load.Settings{Launch: "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8", Log: d.LogPath()}}
	var a, b countFollower
	s.Follow(&a)
	s.Follow(&b)
	if _, err := s.Start(load.WithEmitter(ctx, mine), nil, nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	actions := func(evs []phases.Event) string {
		var out []string
		for _, e := range evs {
			if v, ok := e.Data.(phases.ServerEvent); ok {
				out = append(out, v.Action)
			}
		}
		return strings.Join(out, ",")
	}
	if got := actions(stopMine()); got != "start" {
		t.Errorf("the starting caller's events = %q, want start", got)
	}
	if got := actions(stopOwn()); got != "stop,stopped" {
		t.Errorf("the server's own events = %q, want stop,stopped", got)
	}
	for i, f := range []*countFollower{&a, &b} {
		if f.started.Load() != 1 || f.stopped.Load() != 1 {
			t.Errorf("follower %d: %d starts, %d stops, want 1 and 1", i, f.started.Load(), f.stopped.Load())
		}
	}
}

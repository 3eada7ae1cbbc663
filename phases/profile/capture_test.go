package profile_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

func startSim(t *testing.T) (*sim.Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, sim.Options{LoadTime: 500 * time.Millisecond, Seed: 7, ProfilerFlush: new(300 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, ctx
}

func collect(ctx context.Context) (*phases.Emitter, func() []phases.Event) {
	ch := make(chan phases.Event, 4096)
	var evs []phases.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			evs = append(evs, ev)
		}
	}()
	return &phases.Emitter{Out: ch}, func() []phases.Event { close(ch); <-done; return evs }
}

// A whole capture against the simulated deployment started with the
// profiler: the endpoints answer, the load runs, stop_profile flushes, the
// table appears and is summarised with communication about half of the GPU
// time, as the simulated Kimi-K2.5 TP8 decode has it.
func TestCaptureSim(t *testing.T) {
	d, ctx := startSim(t)
	if err := profile.PrepareSim(ctx, d, "/tmp/prof_dir"); err != nil {
		t.Fatal(err)
	}
	em, events := collect(ctx)
	levels, err := profile.CaptureLevels(ctx, profile.Complete(profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr,
		ProfilerDir: "/tmp/prof_dir", Concurrency: []int{1, 8}, Steps: 20, InputLen: 32, OutputLen: 24}), em)
	evs := events()
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) != 2 || levels[0].Level != 1 || levels[1].Level != 8 {
		t.Fatalf("levels = %+v", levels)
	}
	for _, s := range levels {
		if !strings.Contains(s.Source, "/tmp/prof_dir/profiler_out_0.txt") {
			t.Errorf("C=%d: source = %q, want the rank-0 table", s.Level, s.Source)
		}
		if s.CommunicationShare < 0.3 || s.CommunicationShare > 0.6 {
			t.Errorf("C=%d: communication share = %.3f, want about half", s.Level, s.CommunicationShare)
		}
		if s.TotalCUDAUs <= 0 || len(s.Top) != profile.TopN {
			t.Errorf("C=%d: total %v, %d top kernels", s.Level, s.TotalCUDAUs, len(s.Top))
		}
		// The window is bounded: about Steps steps, counted in the trace.
		if s.TraceSteps < 20 || s.TraceSteps > 60 || s.DecodeSteps != s.TraceSteps || !strings.Contains(s.DecodeStepsSource, "counted in the trace") {
			t.Errorf("C=%d: trace steps %d, decode steps %d (%s)", s.Level, s.TraceSteps, s.DecodeSteps, s.DecodeStepsSource)
		}
		sum := 0.0
		for _, c := range profile.Categories {
			sum += s.PerStepUs[c]
		}
		if s.CommPerStepUs <= 0 || s.GPUPerStepUs <= s.CommPerStepUs || sum < s.GPUPerStepUs*0.999 || sum > s.GPUPerStepUs*1.001 {
			t.Errorf("C=%d: comm/step %v, gpu/step %v, split %v", s.Level, s.CommPerStepUs, s.GPUPerStepUs, s.PerStepUs)
		}
		if len(s.Files) != 9 {
			t.Errorf("C=%d: files = %v, want the table and 8 traces", s.Level, s.Files)
		}
	}
	// A larger batch makes each step longer on the GPU.
	if levels[1].GPUPerStepUs <= levels[0].GPUPerStepUs {
		t.Errorf("GPU per step at C=8 %.0f µs ≤ C=1 %.0f µs", levels[1].GPUPerStepUs, levels[0].GPUPerStepUs)
	}
	steps := map[string]bool{}
	summaries := 0
	for _, ev := range evs {
		switch v := ev.Data.(type) {
		case phases.ProfileStep:
			steps[v.Step] = true
		case phases.ProfileSummary:
			summaries++
		}
	}
	for _, st := range []string{"check", "load", "start_profile", "record", "stop_profile", "collect", "summarise"} {
		if !steps[st] {
			t.Errorf("no %s step event", st)
		}
	}
	if summaries != 2 {
		t.Errorf("%d summary events, want one per level", summaries)
	}
	// The log shows what vLLM logs, and the table rank 0 prints.
	log, _ := d.ReadFile(ctx, d.LogPath())
	for _, want := range []string{"Starting profiler...", "Profiler stopped.", "Self CUDA time total:", `"POST /stop_profile HTTP/1.1" 200`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("server log lacks %q", want)
		}
	}
	// The traces agree with the table on the kernel mix.
	s := levels[0]
	tr, err := d.ReadFile(ctx, s.Files[1])
	if err != nil {
		t.Fatal(err)
	}
	ts, err := profile.ParseTrace(strings.NewReader(string(tr)))
	if err != nil {
		t.Fatalf("%s: %v", s.Files[1], err)
	}
	if diff := ts.CommunicationShare - s.CommunicationShare; diff > 0.1 || diff < -0.1 {
		t.Errorf("trace communication share %.3f vs table %.3f", ts.CommunicationShare, s.CommunicationShare)
	}
}

// A server started without the profiler: the capture stops at the check,
// says how to enable it, and emits a failure that says so.
func TestCaptureProfilerDisabled(t *testing.T) {
	d, ctx := startSim(t)
	o := d.Options()
	if err := d.Run(ctx, "vllm serve "+o.Model+" > "+o.LogPath+" 2>&1 &", nil, nil); err != nil {
		t.Fatal(err)
	}
	for !d.Ready() {
		select {
		case <-ctx.Done():
			t.Fatal("server not ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
	em, events := collect(ctx)
	_, err := profile.Capture(ctx, profile.Complete(profile.Config{Host: d, URL: "http://" + o.ServerAddr, ProfilerDir: profDir}), em)
	evs := events()
	if !errors.Is(err, profile.ErrProfilerDisabled) {
		t.Fatalf("err = %v, want ErrProfilerDisabled", err)
	}
	if !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "reloads") {
		t.Errorf("message %q should name the 404 and the reload", err)
	}
	var failed *phases.ProfileFailed
	for _, ev := range evs {
		if f, ok := ev.Data.(phases.ProfileFailed); ok {
			failed = &f
		}
	}
	if failed == nil || !failed.ProfilerDisabled || failed.Step != "check" {
		t.Errorf("failure event = %+v", failed)
	}
}

// Cancelling during the load still stops the profiler.
func TestCaptureCancelStopsProfiler(t *testing.T) {
	d, ctx := startSim(t)
	if err := profile.PrepareSim(ctx, d, profDir); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	ch := make(chan phases.Event, 4096)
	go func() {
		for ev := range ch {
			if st, ok := ev.Data.(phases.ProfileStep); ok && st.Step == "record" {
				cancel()
			}
		}
	}()
	_, err := profile.Capture(cctx, profile.Complete(profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr, OutputLen: 200, ProfilerDir: profDir}), &phases.Emitter{Out: ch})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	log, _ := d.ReadFile(ctx, d.LogPath())
	if !strings.Contains(string(log), "Stopping profiler...") {
		t.Error("stop_profile was not sent after the cancel")
	}
}

// A capture against a server that is not running says so in words and
// points to starting it, instead of Go's dial error.
func TestCaptureServerDown(t *testing.T) {
	d, ctx := startSim(t) // no server started: nothing listens
	em, events := collect(ctx)
	_, err := profile.Capture(ctx, profile.Complete(profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr, ProfilerDir: profDir}), em)
	evs := events()
	if !errors.Is(err, profile.ErrServerDown) {
		t.Fatalf("err = %v, want ErrServerDown", err)
	}
	for _, want := range []string{"no server answers at http://", "start it with the torch profiler", "1, then s", "r to restart"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "dial tcp") {
		t.Errorf("message %q shows the raw dial error", err)
	}
	var failed *phases.ProfileFailed
	for _, ev := range evs {
		if f, ok := ev.Data.(phases.ProfileFailed); ok {
			failed = &f
		}
	}
	if failed == nil || !failed.ServerDown || failed.ProfilerDisabled {
		t.Errorf("failure event = %+v", failed)
	}
}

// Other traffic on the server during a window is said in a note: the
// profile is not of C streams alone.
func TestCaptureNotesOtherTraffic(t *testing.T) {
	d, ctx := startSim(t)
	if err := profile.PrepareSim(ctx, d, profDir); err != nil {
		t.Fatal(err)
	}
	url := "http://" + d.Options().ServerAddr
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	bg, stop := context.WithCancel(ctx)
	defer stop()
	for i := 0; i < 6; i++ {
		go func() {
			for bg.Err() == nil {
				req, _ := http.NewRequestWithContext(bg, http.MethodPost, url+"/v1/completions",
					strings.NewReader(`{"model":"`+d.Options().Model+`","prompt":"x","max_tokens":400,"ignore_eos":true}`))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := hc.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	s, err := profile.Capture(ctx, profile.Complete(profile.Config{Host: d, URL: url, Steps: 20, InputLen: 16, OutputLen: 24, ProfilerDir: profDir}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "other traffic is in this profile") {
		t.Errorf("notes %q", s.Notes)
	}
}

// With Steady, each level has a decode-only window and a window of the
// sweep's own requests: the first holds no prefill (no prompt tokens in its
// step mix), the second arrivals and completions.
func TestCaptureSteadyWindows(t *testing.T) {
	d, ctx := startSim(t)
	if err := profile.PrepareSim(ctx, d, "/tmp/prof_dir"); err != nil {
		t.Fatal(err)
	}
	em, events := collect(ctx)
	levels, err := profile.CaptureLevels(ctx, profile.Complete(profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr,
		ProfilerDir: "/tmp/prof_dir", Concurrency: []int{4}, Steps: 20, InputLen: 32, OutputLen: 24, Steady: true}), em)
	events()
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) != 2 || levels[0].Window != phases.WindowDecode || levels[1].Window != phases.WindowSteady {
		t.Fatalf("windows = %+v", levels)
	}
	dec, st := levels[0], levels[1]
	if dec.StepMix == nil || dec.StepMix.PromptTokens != 0 || dec.StepMix.Steps < 20 || dec.WindowS <= 0 {
		t.Errorf("decode window: %.2f s, mix %+v", dec.WindowS, dec.StepMix)
	}
	// The decode window's step period with the profiler off, just before it.
	if dec.UnprofiledStepMs <= 0 || st.UnprofiledStepMs != 0 {
		t.Errorf("profiler-off step: decode %.3f ms, steady %.3f ms", dec.UnprofiledStepMs, st.UnprofiledStepMs)
	}
	// At least OutputLen+16 steps, with a request completed and admitted.
	if m := st.StepMix; m == nil || m.Steps < 40 || m.PromptTokens < 32 || m.DecodeTokens <= 0 || st.Requests < 1 {
		t.Errorf("steady window: mix %+v, %d requests", m, st.Requests)
	}
}

// profDir is the simulated server's torch profiler directory in these tests.
const profDir = "/tmp/vllm_profile"

// The per-user profiler folder ({uid}): the simulated server is started
// with it resolved as the host's uid, and the capture reads the traces
// from the same folder.
func TestCapturePerUserDir(t *testing.T) {
	d, ctx := startSim(t)
	dir := "/tmp/vllm_profile-" + remote.UID
	if err := profile.PrepareSim(ctx, d, dir); err != nil {
		t.Fatal(err)
	}
	want := "/tmp/vllm_profile-" + remote.SimUID
	if got := d.ProfilerDir(); got != want {
		t.Fatalf("the simulated server writes traces to %q, want %q", got, want)
	}
	s, err := profile.Capture(ctx, profile.Complete(profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr,
		Steps: 20, InputLen: 16, OutputLen: 24, ProfilerDir: dir}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.ProfilerDir != want || !strings.HasPrefix(s.Source, want+"/") {
		t.Fatalf("capture: dir %q source %q, want traces read from %s", s.ProfilerDir, s.Source, want)
	}
}

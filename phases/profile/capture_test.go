package profile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/sim"
)

func startSim(t *testing.T) (*sim.Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, sim.Options{LoadTime: 500 * time.Millisecond, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	sim.ProfilerFlushTime = 300 * time.Millisecond
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
	s, err := profile.Capture(ctx, profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr,
		ProfilerDir: "/tmp/prof_dir", Requests: 4, Concurrency: []int{1, 8}, InputLen: 32, OutputLen: 24}, em)
	evs := events()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Source, "/tmp/prof_dir/profiler_out_0.txt") {
		t.Errorf("source = %q, want the rank-0 table", s.Source)
	}
	if s.CommunicationShare < 0.3 || s.CommunicationShare > 0.6 {
		t.Errorf("communication share = %.3f, want about half", s.CommunicationShare)
	}
	if s.TotalCUDAUs <= 0 || len(s.Top) != profile.TopN {
		t.Errorf("total %v, %d top kernels", s.TotalCUDAUs, len(s.Top))
	}
	// 4 requests at C=1, then 8 at C=8 (a level sends at least C).
	if s.OutputTokens != 12*24 || s.Requests != 12 {
		t.Errorf("%d requests, %d output tokens, want 12 and 288", s.Requests, s.OutputTokens)
	}
	if s.DecodeSteps <= 0 || s.CommPerStepUs <= 0 || s.GPUPerStepUs <= s.CommPerStepUs {
		t.Errorf("decode steps %d, comm/step %v, gpu/step %v", s.DecodeSteps, s.CommPerStepUs, s.GPUPerStepUs)
	}
	if len(s.Files) != 9 {
		t.Errorf("files = %v, want the table and 8 traces", s.Files)
	}
	steps := map[string]bool{}
	var summary bool
	for _, ev := range evs {
		switch v := ev.Data.(type) {
		case phases.ProfileStep:
			steps[v.Step] = true
		case phases.ProfileSummary:
			summary = true
		}
	}
	for _, st := range []string{"check", "start_profile", "load", "stop_profile", "collect", "summarise"} {
		if !steps[st] {
			t.Errorf("no %s step event", st)
		}
	}
	if !summary {
		t.Error("no summary event")
	}
	// The log shows what vLLM logs, and the table rank 0 prints.
	log, _ := d.ReadFile(ctx, d.LogPath())
	for _, want := range []string{"Starting profiler...", "Profiler stopped.", "Self CUDA time total:", `"POST /stop_profile HTTP/1.1" 200`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("server log lacks %q", want)
		}
	}
	// The traces agree with the table on the kernel mix.
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
	sim.InstallProfiler(d)
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
	_, err := profile.Capture(ctx, profile.Config{Host: d, URL: "http://" + o.ServerAddr}, em)
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
	if err := profile.PrepareSim(ctx, d, ""); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	ch := make(chan phases.Event, 4096)
	go func() {
		for ev := range ch {
			if st, ok := ev.Data.(phases.ProfileStep); ok && st.Step == "load" {
				cancel()
			}
		}
	}()
	_, err := profile.Capture(cctx, profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr, Requests: 50, OutputLen: 200}, &phases.Emitter{Out: ch})
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
	_, err := profile.Capture(ctx, profile.Config{Host: d, URL: "http://" + d.Options().ServerAddr}, em)
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

package macro_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestGoodputLargestConcurrency: 4 seats and 10 ms steps; at C=16 most
// requests wait a batch or more, past a 60 ms TTFT: the largest C meeting
// the SLO is 4.
func TestGoodputLargestConcurrency(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{StepTime: 10 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, MaxNumSeqs: 4})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{1, 4, 16}, Duration: time.Second, InputLen: 8, OutputLen: 10, Seed: 5,
		SLO: "ttft=60ms,tpot=20ms"})
	for _, l := range res.Levels {
		if l.Goodput == nil {
			t.Fatalf("C=%d: no goodput", l.Concurrency)
		}
		t.Logf("C=%d: %+v (TTFT p50 %.1f ms)", l.Concurrency, *l.Goodput, l.MedianTTFTms)
	}
	if g := res.Levels[1].Goodput; !g.Met || g.Share < 0.9 {
		t.Errorf("C=4 %+v", g)
	}
	if g := res.Levels[2].Goodput; g.Met || g.Share > 0.5 {
		t.Errorf("C=16 %+v", g)
	}
	if res.SLO == nil || res.SLO.MaxConcurrency != 4 || !strings.Contains(res.SLO.Text, "largest C meeting the SLO") {
		t.Errorf("slo %+v", res.SLO)
	}
}

// TestRepeatsNoisyEmulator: three runs per level on a noisy emulator: the
// level's figures are the runs' means, with a 95% interval.
func TestRepeatsNoisyEmulator(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 100 * time.Microsecond, PrefillPerToken: 1, Jitter: 0.4})
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{2, 4}, Requests: 16, InputLen: 8, OutputLen: 10, Seed: 6, Repeat: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 64)
	var started []phases.LevelStarted
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			if d, ok := ev.Data.(phases.LevelStarted); ok {
				started = append(started, d)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, &phases.Emitter{Out: ch})
	close(ch)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	// Each run announces itself: run 1, 2, 3 of 3, per level.
	if len(started) != 6 || started[1].Run != 2 || started[5].Runs != 3 || started[5].Concurrency != 4 {
		t.Errorf("level starts %+v", started)
	}
	for _, l := range res.Levels {
		r := l.Repeats
		if r == nil || r.N != 3 || len(r.Runs) != 3 {
			t.Fatalf("C=%d repeats %+v", l.Concurrency, r)
		}
		m, h := macro.MeanCI95(r.Runs)
		if l.OutputThroughput != m || r.CI95["output_throughput"] != h || h <= 0 {
			t.Errorf("C=%d: %.1f tok/s, runs %v (mean %.1f ± %.1f)", l.Concurrency, l.OutputThroughput, r.Runs, m, h)
		}
		if l.Completed != 3*16 {
			t.Errorf("C=%d: %d completed over 3 runs of 16", l.Concurrency, l.Completed)
		}
	}
	if _, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Repeat: -1})); err == nil {
		t.Error("--repeat -1 accepted")
	}
}

package ui

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
)

// On quit the cockpit waits for a running phase's end to be journalled, but
// not for the load (the server goes on loading) nor for a phase a resumed
// journal left open.
func TestWaitPhases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess := report.NewSession(ctx, nil)
	rec := func(kind string, data any) {
		t.Helper()
		if err := sess.Record(phases.New(time.Now(), kind, data)); err != nil {
			t.Fatal(err)
		}
	}
	rec(phases.KindPhaseStarted, phases.PhaseStarted{Name: phases.Micro}) // left open before this session
	skip := len(sess.Events())
	rec(phases.KindPhaseStarted, phases.PhaseStarted{Name: phases.Load})
	start := time.Now()
	waitPhases(sess, skip, 5*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("waited %v for the load or an earlier session's phase", d)
	}

	rec(phases.KindPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = sess.Record(phases.New(time.Now(), phases.KindPhaseFinished, phases.PhaseFinished{Name: phases.Macro}))
	}()
	start = time.Now()
	waitPhases(sess, skip, 5*time.Second)
	if d := time.Since(start); d < 250*time.Millisecond || d > 4*time.Second {
		t.Fatalf("waited %v, want until the sweep's end (about 300 ms)", d)
	}

	rec(phases.KindPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}) // never ends
	start = time.Now()
	waitPhases(sess, skip, 200*time.Millisecond)
	if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
		t.Fatalf("waited %v, want the 200 ms limit", d)
	}
}

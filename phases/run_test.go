package phases

import (
	"context"
	"errors"
	"testing"
)

// Run brackets a run with its start (parameters) and finish (outcome); the
// finish is sent even when the run's context has ended.
func TestRunBracketsEveryOutcome(t *testing.T) {
	for _, c := range []struct {
		err     error
		outcome string
		msg     string
	}{
		{nil, OutcomeDone, ""},
		{errors.New("exit status 1"), OutcomeFailed, "exit status 1"},
		{context.Canceled, OutcomeCancelled, ""},
	} {
		ch := make(chan Event, 4)
		ctx, cancel := context.WithCancel(context.Background())
		err := Run(ctx, &Emitter{Out: ch}, Micro, map[string]any{"tp": 8}, func(context.Context) error {
			cancel() // the program quits while the phase runs
			return c.err
		})
		if err != c.err {
			t.Errorf("Run returned %v, want %v", err, c.err)
		}
		close(ch)
		var evs []Event
		for ev := range ch {
			evs = append(evs, ev)
		}
		if len(evs) != 2 {
			t.Fatalf("%d events", len(evs))
		}
		st, ok := evs[0].Data.(PhaseStarted)
		if !ok || st.Name != Micro || st.Params.(map[string]any)["tp"] != 8 {
			t.Errorf("start %+v", evs[0])
		}
		fin, ok := evs[1].Data.(PhaseFinished)
		if !ok || fin.Name != Micro || fin.Outcome != c.outcome || fin.Err != c.msg {
			t.Errorf("finish %+v, want %s %q", evs[1].Data, c.outcome, c.msg)
		}
	}
}

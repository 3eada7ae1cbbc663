package common

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func bracket(kind, name string) phases.Event {
	if kind == phases.KindSessionPhaseStarted {
		return phases.New(time.Now(), kind, phases.PhaseStarted{Name: name})
	}
	return phases.New(time.Now(), kind, phases.PhaseFinished{Name: name})
}

// A run ends for the pane only once both the engine returned and its
// finish event came, in either order, so every result is in by then.
func TestRunEndsAfterEngineAndFinish(t *testing.T) {
	d := &Deps{}
	for _, finishFirst := range []bool{true, false} {
		r := ptr(NewRunControl(phases.Micro))
		end := r.Start(d, func(context.Context, *phases.Emitter) error { return nil })()
		if r.Event(bracket(phases.KindSessionPhaseStarted, phases.Micro)) || !r.Active() {
			t.Fatal("the start ended the run")
		}
		if r.Event(bracket(phases.KindSessionPhaseFinished, phases.NCCL)) {
			t.Fatal("another phase's finish ended the run")
		}
		if finishFirst {
			if r.Event(bracket(phases.KindSessionPhaseFinished, phases.Micro)) {
				t.Fatal("ended before the engine returned")
			}
			if _, ended, mine := r.Update(end); !ended || !mine || r.State != RunFinished {
				t.Fatalf("finish then return: ended %v state %v", ended, r.State)
			}
			continue
		}
		if cmd, ended, _ := r.Update(end); ended || cmd == nil {
			t.Fatal("ended before its finish event")
		}
		if !r.Event(bracket(phases.KindSessionPhaseFinished, phases.Micro)) || r.State != RunFinished {
			t.Fatalf("return then finish: state %v", r.State)
		}
	}
}

func TestRunOutcomes(t *testing.T) {
	d := &Deps{}
	other := ptr(NewRunControl(phases.NCCL))
	for _, c := range []struct {
		err    error
		cancel bool
		want   RunState
	}{
		{nil, false, RunFinished},
		{errors.New("exit status 1"), false, RunFailed},
		{context.Canceled, true, RunCancelled},
		{errors.New("script killed"), true, RunCancelled},
	} {
		r := ptr(NewRunControl(phases.Micro))
		end := r.Start(d, func(context.Context, *phases.Emitter) error { return c.err })()
		if _, _, mine := other.Update(end); mine {
			t.Fatal("another run took the end")
		}
		if c.cancel && !r.Cancel() {
			t.Fatal("no run to cancel")
		}
		// The engine never started the phase: the end comes after a grace.
		cmd, _, _ := r.Update(end)
		if _, ended, _ := r.Update(cmd()); !ended || r.State != c.want {
			t.Errorf("err %v cancel %v: state %v, want %v", c.err, c.cancel, r.State, c.want)
		}
		if c.want == RunFailed && r.Err != c.err {
			t.Errorf("Err %v", r.Err)
		}
		if r.Cancel() {
			t.Error("cancelled an ended run")
		}
	}
}

// A run of the phase that the pane did not start (the campaign run's) is
// seen from its events; it neither ends the pane's run nor goes unnoticed.
func TestRunElsewhere(t *testing.T) {
	r := ptr(NewRunControl(phases.Macro))
	r.Event(bracket(phases.KindSessionPhaseStarted, phases.Macro))
	if !r.Elsewhere() || r.Active() {
		t.Fatalf("elsewhere %v active %v", r.Elsewhere(), r.Active())
	}
	r.Event(bracket(phases.KindSessionPhaseFinished, phases.NCCL))
	if !r.Elsewhere() {
		t.Fatal("another phase's finish ended it")
	}
	r.Event(bracket(phases.KindSessionPhaseFinished, phases.Macro))
	if r.Elsewhere() || r.State != RunIdle {
		t.Fatalf("after its finish: elsewhere %v state %v", r.Elsewhere(), r.State)
	}
	// The pane's own run is told from it.
	end := r.Start(&Deps{}, func(context.Context, *phases.Emitter) error { return nil })()
	r.Event(bracket(phases.KindSessionPhaseStarted, phases.Macro))
	if r.Elsewhere() {
		t.Fatal("the pane's own start taken for another's")
	}
	r.Event(bracket(phases.KindSessionPhaseFinished, phases.Macro))
	if _, ended, _ := r.Update(end); !ended || r.State != RunFinished || r.Elsewhere() {
		t.Fatalf("own run: ended %v state %v elsewhere %v", ended, r.State, r.Elsewhere())
	}
}

func ptr(r RunControl) *RunControl { return &r }

// Two runs of the phase begun elsewhere (an NCCL run on two nodes) need two
// finishes before the pane sees none under way.
func TestTwoRunsElsewhereNeedTwoFinishes(t *testing.T) {
	r := NewRunControl(phases.NCCL)
	r.Event(bracket(phases.KindSessionPhaseStarted, phases.NCCL))
	r.Event(bracket(phases.KindSessionPhaseStarted, phases.NCCL))
	r.Event(bracket(phases.KindSessionPhaseFinished, phases.NCCL))
	if !r.Elsewhere() {
		t.Fatal("one finish of two runs elsewhere closed both")
	}
	r.Event(bracket(phases.KindSessionPhaseFinished, phases.NCCL))
	if r.Elsewhere() {
		t.Fatal("two finishes left a run elsewhere")
	}
}

package run

import (
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Span is when a step was done.
type Span struct {
	Started, Finished time.Time
	// Manual is true when the step was done by hand (a phase run from its
	// pane), not by a campaign run.
	Manual bool
}

// DoneSteps reads a journal for the steps done for id: a run's step that
// ended done, or a phase run by hand that ended well (a load that became
// ready, a sweep with at least one level, micro, NCCL, a profile, which
// implies the restart before it).
// The latest word on a step wins: a step done and later failed is not done.
// A run for another identity starts over: what was done before it is for
// another model, TP or launch command. Phases run by hand belong to the
// identity of the latest run before them (id when there is none).
func DoneSteps(events []phases.Event, id phases.RunIdentity) map[string]Span {
	done := map[string]Span{}
	mine := true
	started := map[string]time.Time{}      // step → its start
	phaseStarted := map[string]time.Time{} // phase → its latest run's start
	levels := 0
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			if d.Identity != id {
				clear(done)
				mine = false
			} else {
				mine = true
			}
		case phases.RunStep:
			if !mine {
				continue
			}
			switch d.State {
			case phases.StepStarted:
				started[d.Name] = ev.Time
			case phases.StepDone:
				done[d.Name] = Span{Started: started[d.Name], Finished: ev.Time}
			default:
				delete(done, d.Name)
			}
		case phases.PhaseStarted:
			phaseStarted[d.Name] = ev.Time
			if d.Name == phases.Macro {
				levels = 0
			}
		case phases.LevelResult:
			levels++
		case phases.PhaseFinished:
			if !mine || d.Err != "" || (d.Outcome != "" && d.Outcome != phases.OutcomeDone) {
				continue // failed or cancelled
			}
			sp := Span{Started: phaseStarted[d.Name], Finished: ev.Time, Manual: true}
			switch d.Name {
			case phases.Load:
				markManual(done, Serve, sp) // a load followed to ready by hand
			case phases.Macro:
				if levels > 0 {
					markManual(done, Macro, sp)
				}
			case phases.Micro:
				markManual(done, Micro, sp)
			case phases.NCCL:
				markManual(done, NCCL, sp)
			case phases.Profile:
				markManual(done, Restart, sp)
				markManual(done, Profile, sp)
			}
		}
	}
	return done
}

// markManual counts a phase run by hand as its step done, unless a run's
// own record of the step is there already (the run brackets the same phase
// events).
func markManual(done map[string]Span, step string, sp Span) {
	if d, ok := done[step]; ok && !d.Manual {
		return
	}
	done[step] = sp
}

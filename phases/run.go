package phases

import (
	"context"
	"errors"
	"time"
)

// The outcomes of a phase's run, as PhaseFinished.Outcome says them.
const (
	OutcomeDone      = "done"
	OutcomeCancelled = "cancelled"
	OutcomeFailed    = "failed"
)

// finishGrace is how long a run's end may wait to be sent once its context
// has ended (the program is quitting): the journal still learns how it ended.
const finishGrace = 2 * time.Second

// Run brackets one run of a phase: it emits PhaseStarted with the run's
// parameters, calls run, and emits PhaseFinished with the outcome, even when
// ctx has ended by then. It returns run's error. Every engine runs through
// it, so each phase owns its run and the journal brackets every run alike.
func Run(ctx context.Context, em *Emitter, name string, params any, run func(context.Context) error) error {
	em.Emit(ctx, KindSessionPhaseStarted, PhaseStarted{Name: name, Params: params})
	err := run(ctx)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishGrace)
	defer cancel()
	em.Emit(fctx, KindSessionPhaseFinished, Finished(name, err))
	return err
}

// Finished is the end of a run of phase name that returned err: done,
// cancelled (err is, or wraps, context.Canceled) or failed with err's text.
func Finished(name string, err error) PhaseFinished {
	switch {
	case err == nil:
		return PhaseFinished{Name: name, Outcome: OutcomeDone}
	case errors.Is(err, context.Canceled):
		return PhaseFinished{Name: name, Outcome: OutcomeCancelled}
	}
	return PhaseFinished{Name: name, Outcome: OutcomeFailed, Err: err.Error()}
}

package common

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun"
)

// RunState is where a pane's run of its phase stands.
type RunState int

// The states of a run. A run that is Running or Cancelling is active.
const (
	RunIdle       RunState = iota // never started
	RunRunning                    // started, not yet ended
	RunCancelling                 // cancel asked for, not yet ended
	RunFinished                   // ended well
	RunCancelled                  // ended because it was cancelled
	RunFailed                     // ended with an error (Err)
	RunBusy                       // did not start: the GPUs are busy (Busy)
)

// endGrace is how long a run that has returned waits for its
// PhaseFinished event (which comes after every result it emitted) before
// the pane is told it ended anyway.
const endGrace = 2 * time.Second

// noStartGrace is that wait for a run whose PhaseStarted was not seen
// either: a few event batches.
const noStartGrace = 600 * time.Millisecond

// RunControl is the one state machine of every pane that runs a phase: start,
// cancel, busy GPUs, finished, failed. The phase's engine emits its own
// start and finish; a run ends for the pane when both the engine has
// returned (RunEndedMsg, which carries the error and nothing else: results
// arrive as events) and its PhaseFinished event has been seen, so that the
// pane has every result of the run when it learns the run ended.
type RunControl struct {
	Phase string
	State RunState
	Err   error            // why the last run failed (RunFailed)
	Busy  *pyrun.BusyError // the GPUs the last start found busy (RunBusy)

	cancel    context.CancelFunc
	gen       int
	elsewhere phases.Brackets // runs of phases under way that this pane did not start (Nested: see NewRunControl)
	started   bool            // the run's PhaseStarted was seen
	finished  bool            // its PhaseFinished was seen
	returned  bool            // its engine returned (err)
	err       error
}

// RunEndedMsg says the engine of a pane's run returned.
type RunEndedMsg struct {
	run *RunControl
	gen int
	err error
}

// runGraceMsg ends a run whose PhaseFinished never came.
type runGraceMsg struct {
	run *RunControl
	gen int
}

// NewRunControl is the run control of a pane of phase: two runs of the
// phase begun elsewhere need two finishes before none is open.
func NewRunControl(phase string) RunControl {
	return RunControl{Phase: phase, elsewhere: phases.Brackets{Nested: true}}
}

// Active is true while the run has not ended.
func (r *RunControl) Active() bool { return r.State == RunRunning || r.State == RunCancelling }

// Start runs fn in a command under a context the pane can cancel, with an
// emitter into the session. fn is the engine, which brackets its own run.
func (r *RunControl) Start(d *Deps, fn func(ctx context.Context, em *phases.Emitter) error) tea.Cmd {
	parent := d.Ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	r.gen++
	gen := r.gen
	r.cancel, r.State, r.Err, r.Busy = cancel, RunRunning, nil, nil
	r.started, r.finished, r.returned, r.err = false, false, false, nil
	var em *phases.Emitter
	if d.Session != nil {
		em = &phases.Emitter{Out: d.Session.Sink(), Now: d.Now}
	}
	return func() tea.Msg { return RunEndedMsg{run: r, gen: gen, err: fn(ctx, em)} }
}

// Cancel cancels an active run; it reports whether there was one to cancel.
func (r *RunControl) Cancel() bool {
	if r.State != RunRunning {
		return false
	}
	r.cancel()
	r.State = RunCancelling
	return true
}

// Event folds one of the phase's events into the run: its start and finish
// brackets. ended is true when the run has just ended.
// A start while the pane's own run has not seen its start is that run's;
// a finish is its own once no run elsewhere is open; any other start or
// finish of the phase is a run elsewhere's.
func (r *RunControl) Event(ev phases.Event) (ended bool) {
	name, start := r.elsewhere.Kind(ev)
	switch {
	case name == "" || name != r.Phase:
		return false
	case start && r.Active() && !r.started:
		r.started = true
		return false
	case !start && r.Active() && r.started && !r.finished && !r.Elsewhere():
		r.finished = true
		return r.settle()
	}
	r.elsewhere.Step(ev)
	return false
}

// Elsewhere is true while a run of the phase that this pane did not start
// is under way (the campaign run's, say): starting another would run the
// phase twice at once.
func (r *RunControl) Elsewhere() bool { return r.elsewhere.Open(r.Phase) }

// Update handles the run's own messages; mine is false for any other.
// ended is true when the run has just ended; cmd waits for a late finish.
func (r *RunControl) Update(msg tea.Msg) (cmd tea.Cmd, ended, mine bool) {
	switch msg := msg.(type) {
	case RunEndedMsg:
		if msg.run != r {
			return nil, false, false
		}
		if msg.gen != r.gen || !r.Active() {
			return nil, false, true
		}
		r.returned, r.err = true, msg.err
		if r.finished {
			return nil, r.settle(), true
		}
		// Its events come in batches: wait for the finish, briefly when
		// no start was seen (the run may have failed before starting).
		wait, gen := endGrace, r.gen
		if !r.started {
			wait = noStartGrace
		}
		return tea.Tick(wait, func(time.Time) tea.Msg { return runGraceMsg{run: r, gen: gen} }), false, true
	case runGraceMsg:
		if msg.run != r {
			return nil, false, false
		}
		if msg.gen != r.gen || !r.Active() {
			return nil, false, true
		}
		r.finished = true
		return nil, r.settle(), true
	}
	return nil, false, false
}

// settle ends the run once the engine returned and its finish was seen.
func (r *RunControl) settle() bool {
	if !r.returned || !r.finished {
		return false
	}
	wasCancel := r.State == RunCancelling
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	var busy *pyrun.BusyError
	switch err := r.err; {
	case err == nil:
		r.State = RunFinished
	case errors.As(err, &busy):
		r.State, r.Busy = RunBusy, busy
	case wasCancel || errors.Is(err, context.Canceled):
		r.State = RunCancelled
	default:
		r.State, r.Err = RunFailed, err
	}
	return true
}

// Package gpubench is what the Micro and NCCL panes share: the run of a GPU
// phase from a key press (start, cancel, the busy-GPU check and the server
// stop that frees the GPUs), their common keys, and the title and status
// lines above each pane's tables.
package gpubench

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/ui/common"
)

// State is where a pane's run is.
type State int

// The states of a run.
const (
	Idle State = iota
	Running
	Cancelling
	StoppingServer
)

// DoneMsg says a run a Runner started has ended.
type DoneMsg struct {
	runner *Runner
	Run    int
	Err    error
}

// ServerStoppedMsg says the server stop asked for with x has ended.
type ServerStoppedMsg struct {
	runner *Runner
	Err    error
}

// Runner runs one GPU phase for a pane and keeps the outcome the pane shows.
type Runner struct {
	Name  string // "micro", "nccl": the prefix of status messages
	Phase string // the phase's name in its events
	D     *common.Deps

	State  State
	cancel context.CancelFunc
	run    int
	Busy   *pyrun.BusyError // the last start found the GPUs busy
	Msg    string           // the last run's outcome or error
	Failed bool
	Done   bool   // the last run ended well
	Label  string // model and parallelism of the last run
}

// Active is true while the script (or the server stop before it) runs.
func (r *Runner) Active() bool { return r.State != Idle }

func (r *Runner) parent() context.Context {
	if r.D.Ctx != nil {
		return r.D.Ctx
	}
	return context.Background()
}

// Begin checks that a run can start: nothing runs, the campaign, session
// and host are there and the campaign names a model. It returns the model
// spec and the tensor-parallel size (default 8); when ok is false, cmd says
// why.
func (r *Runner) Begin() (spec string, tp int, cmd tea.Cmd, ok bool) {
	if r.Active() {
		return "", 0, common.Status(r.Name + " is already running (c cancels it)"), false
	}
	c := r.D.Campaign
	if c == nil || r.D.Session == nil || r.D.Host == nil {
		return "", 0, common.Error(fmt.Errorf("%s: no campaign, session or host", r.Name)), false
	}
	spec, err := c.ModelSpec()
	if err != nil {
		r.Msg, r.Failed = err.Error(), true
		return "", 0, common.Error(err), false
	}
	return spec, c.TP(), nil, true
}

// Job is one run of the phase.
type Job struct {
	Spec    string        // the model
	Options model.Options // how the plan is built
	// Params are the phase's parameters, journalled with its start.
	Params func(model.Plan) map[string]any
	Run    func(ctx context.Context, plan model.Plan, em *phases.Emitter) error
}

// Launch starts j with label as the run's title: the returned command
// resolves the model on the host, builds the plan, runs the phase between
// its start and finish events, and ends with a DoneMsg.
func (r *Runner) Launch(label string, j Job) tea.Cmd {
	ctx, cancel := context.WithCancel(r.parent())
	r.run++
	run := r.run
	r.cancel, r.State = cancel, Running
	r.Busy, r.Msg, r.Failed, r.Done, r.Label = nil, "", false, false, label
	host := r.D.Host
	em := &phases.Emitter{Out: r.D.Session.Sink(), Now: r.D.Now}
	return tea.Batch(func() tea.Msg {
		done := func(err error) tea.Msg { return DoneMsg{runner: r, Run: run, Err: err} }
		mc, err := model.Resolve(ctx, host, j.Spec)
		var plan model.Plan
		if err == nil {
			plan, err = model.Build(mc, j.Options)
		}
		if err != nil {
			return done(err)
		}
		em.Emit(ctx, phases.KindPhaseStarted, &phases.PhaseStarted{Name: r.Phase, Params: j.Params(plan)})
		err = j.Run(ctx, plan, em)
		fin := &phases.PhaseFinished{Name: r.Phase}
		if err != nil {
			fin.Err = err.Error()
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
		em.Emit(fctx, phases.KindPhaseFinished, fin)
		fcancel()
		return done(err)
	})
}

// Stop is the c key.
func (r *Runner) Stop() tea.Cmd {
	switch r.State {
	case Running:
		r.cancel()
		r.State = Cancelling
		return common.Status(r.Name + ": cancelling (the script is stopped on the host)")
	case Cancelling:
		return common.Status(r.Name + ": already cancelling")
	case StoppingServer:
		return common.Status(r.Name + ": the server is being stopped; wait for it")
	}
	return common.Status(r.Name + ": nothing is running")
}

// Update handles the runner's own messages (handled is false for any
// other); start starts a run again after the server stop.
func (r *Runner) Update(msg tea.Msg, start func(force bool) tea.Cmd) (cmd tea.Cmd, handled bool) {
	switch msg := msg.(type) {
	case DoneMsg:
		if msg.runner != r {
			return nil, false
		}
		return r.finish(msg), true
	case ServerStoppedMsg:
		if msg.runner != r {
			return nil, false
		}
		return r.serverStopped(msg, start), true
	}
	return nil, false
}

func (r *Runner) finish(msg DoneMsg) tea.Cmd {
	if msg.Run != r.run {
		return nil
	}
	wasCancel := r.State == Cancelling
	r.State, r.cancel = Idle, nil
	var busy *pyrun.BusyError
	switch {
	case msg.Err == nil:
		r.Done = true
		return common.Status(r.Name + ": done")
	case errors.As(msg.Err, &busy):
		r.Busy = busy
		r.Msg = ""
		return common.Status(r.Name + ": the GPUs are busy: x stops the server and runs, f runs anyway")
	case wasCancel:
		r.Msg = "cancelled: the results so far are kept"
		return common.Status(r.Name + ": " + r.Msg)
	}
	r.Msg, r.Failed = msg.Err.Error(), true
	return common.Error(fmt.Errorf("%s: %w", r.Name, msg.Err))
}

// StopServer is the x key after a busy start: stop the serving engine the
// way the Load phase does (its process group, or its container), then run.
func (r *Runner) StopServer() tea.Cmd {
	if r.Active() {
		return nil
	}
	r.State = StoppingServer
	srv := &load.Server{Host: r.D.Host, Settings: r.D.Campaign.ServerSettings(),
		Emitter: &phases.Emitter{Out: r.D.Session.Sink(), Now: r.D.Now}}
	ctx := r.parent()
	return tea.Batch(common.Status(r.Name+": stopping the server to free the GPUs"), func() tea.Msg {
		return ServerStoppedMsg{runner: r, Err: srv.Stop(ctx)}
	})
}

func (r *Runner) serverStopped(msg ServerStoppedMsg, start func(bool) tea.Cmd) tea.Cmd {
	r.State = Idle
	if msg.Err != nil {
		r.Msg, r.Failed = "stopping the server: "+msg.Err.Error(), true
		return common.Error(errors.New(r.Msg))
	}
	r.Busy = nil
	return start(false)
}

// Package gpupane is what the Micro and NCCL panes share: the run of a GPU
// phase from a key press (start, cancel, the busy-GPU check and the server
// stop that frees the GPUs), their common keys, and the title and status
// lines above each pane's tables.
package gpupane

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/ui/common"
)

// ServerStoppedMsg says the server stop asked for with x has ended.
type ServerStoppedMsg struct {
	runner *Runner
	Err    error
}

// Runner runs one GPU phase for a pane: the shared run state machine, plus
// the server stop that frees busy GPUs, and the last run's label.
type Runner struct {
	common.RunControl
	Name string // "micro", "nccl": the prefix of status messages
	D    *common.Deps

	Stopping bool   // the server is being stopped before a run
	StopErr  string // the last server stop failed
	Label    string // model and parallelism of the last run
}

// NewRunner builds the runner of phase for a pane; name prefixes its
// status messages.
func NewRunner(d *common.Deps, phase, name string) Runner {
	return Runner{RunControl: common.NewRunControl(phase), Name: name, D: d}
}

// Active is true while the script (or the server stop before it) runs.
func (r *Runner) Active() bool { return r.RunControl.Active() || r.Stopping }

// Begin checks that a run can start: nothing runs, the campaign, session
// and host are there and the campaign names a model. It returns the model
// spec and the tensor-parallel size (default 8); when ok is false, cmd says
// why.
func (r *Runner) Begin() (spec string, tp int, cmd tea.Cmd, ok bool) {
	if r.Active() {
		return "", 0, common.Status(r.Name + " is already running (c cancels it)"), false
	}
	if r.Elsewhere() {
		return "", 0, common.Status(r.Name + " is running, started elsewhere (the campaign run); its results show here"), false
	}
	c := r.D.Campaign
	if c == nil || r.D.Session == nil || r.D.Host == nil {
		return "", 0, common.Error(fmt.Errorf("%s: no campaign, session or host", r.Name)), false
	}
	spec, err := c.ModelSpec()
	if err != nil {
		r.State, r.Err = common.RunFailed, err
		return "", 0, common.Error(err), false
	}
	return spec, c.TP(), nil, true
}

// Job is one run of the phase.
type Job struct {
	Spec    string        // the model
	Options model.Options // how the plan is built
	// Run is the phase's engine, which brackets its own run.
	Run func(ctx context.Context, plan model.Plan, em *phases.Emitter) error
}

// Launch starts j with label as the run's title: the command resolves the
// model on the host, builds the plan and runs the phase.
func (r *Runner) Launch(label string, j Job) tea.Cmd {
	r.Label, r.StopErr = label, ""
	host := r.D.Host
	return r.Start(r.D, func(ctx context.Context, em *phases.Emitter) error {
		mc, err := model.Resolve(ctx, host, j.Spec)
		if err != nil {
			return err
		}
		plan, err := model.Build(mc, j.Options)
		if err != nil {
			return err
		}
		return j.Run(ctx, plan, em)
	})
}

// Stop is the c key.
func (r *Runner) Stop() tea.Cmd {
	switch {
	case r.Cancel():
		return common.Status(r.Name + ": cancelling (the script is stopped on the host)")
	case r.State == common.RunCancelling:
		return common.Status(r.Name + ": already cancelling")
	case r.Stopping:
		return common.Status(r.Name + ": the server is being stopped; wait for it")
	}
	return common.Status(r.Name + ": nothing is running")
}

// Events folds the phase's events into the run; the command says how a run
// that just ended went.
func (r *Runner) Events(evs []phases.Event) tea.Cmd {
	for _, ev := range evs {
		if r.Event(ev) {
			return r.ended()
		}
	}
	return nil
}

// Update handles the runner's own messages (handled is false for any
// other); start starts a run again after the server stop.
func (r *Runner) Update(msg tea.Msg, start func(force bool) tea.Cmd) (cmd tea.Cmd, handled bool) {
	if sm, ok := msg.(ServerStoppedMsg); ok {
		if sm.runner != r {
			return nil, false
		}
		return r.serverStopped(sm, start), true
	}
	cmd, ended, mine := r.RunControl.Update(msg)
	if ended {
		return r.ended(), true
	}
	return cmd, mine
}

// ended says how the run that just ended went.
func (r *Runner) ended() tea.Cmd {
	switch r.State {
	case common.RunFinished:
		return common.Status(r.Name + ": done")
	case common.RunBusy:
		return common.Status(r.Name + ": the GPUs are busy: x stops the server and runs, f runs anyway")
	case common.RunCancelled:
		return common.Status(r.Name + ": " + cancelledText)
	}
	return common.Error(fmt.Errorf("%s: %w", r.Name, r.Err))
}

const cancelledText = "cancelled: the results so far are kept"

// StopServer is the x key after a busy start: stop the serving engine the
// way the Load phase does (its process group, or its container), then run.
// It stops the cockpit's shared server (Deps.Server): every node's, and
// told to the Load pane's watcher, which then reads the stop as one asked
// for, not as a load that died.
func (r *Runner) StopServer() tea.Cmd {
	if r.Active() {
		return nil
	}
	r.Stopping, r.StopErr = true, ""
	srv := r.D.Server
	if srv == nil {
		srv = r.D.Campaign.NewServer(r.D.Host)
	}
	ctx := r.D.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = load.WithEmitter(ctx, &phases.Emitter{Out: r.D.Session.Sink(), Now: r.D.Now})
	return tea.Batch(common.Status(r.Name+": stopping the server to free the GPUs"), func() tea.Msg {
		return ServerStoppedMsg{runner: r, Err: srv.Stop(ctx)}
	})
}

func (r *Runner) serverStopped(msg ServerStoppedMsg, start func(bool) tea.Cmd) tea.Cmd {
	r.Stopping = false
	if msg.Err != nil {
		r.StopErr = "stopping the server: " + msg.Err.Error()
		return common.Error(errors.New(r.StopErr))
	}
	r.State, r.Busy = common.RunIdle, nil
	return start(false)
}

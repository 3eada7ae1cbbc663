package ncclppane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/micro/pyrun"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/ui/common"
)

// doneMsg says a run this pane started has ended.
type doneMsg struct {
	run int
	err error
}

// serverStoppedMsg says the server stop asked for with x has ended.
type serverStoppedMsg struct{ err error }

func (m *Model) parent() context.Context {
	if m.d.Ctx != nil {
		return m.d.Ctx
	}
	return context.Background()
}

// start runs the NCCL phase with the campaign's model and TP (for the
// step's all-reduce count and sizes), NCCL.NProc ranks under NCCL.Torchrun,
// at NCCL.Batch. force skips the busy-GPU check.
func (m *Model) start(force bool) tea.Cmd {
	if m.Busy() {
		return common.Status("nccl is already running (c cancels it)")
	}
	c := m.d.Campaign
	if c == nil || m.d.Session == nil || m.d.Host == nil {
		return common.Error(errors.New("nccl: no campaign, session or host"))
	}
	spec, err := model.Spec(c.Model.Config, c.Model.Preset, c.Model.Name)
	if err != nil {
		m.msg, m.failed = err.Error(), true
		return common.Error(err)
	}
	tp := c.Model.TP
	if tp < 1 {
		tp = 8
	}
	nproc := c.NCCL.NProc
	if nproc < 1 {
		nproc = tp
	}
	ctx, cancel := context.WithCancel(m.parent())
	m.run++
	run := m.run
	m.cancel, m.state = cancel, running
	m.res, m.busy, m.msg, m.failed, m.done, m.scroll = nccl.Result{}, nil, "", false, false, 0
	m.label = fmt.Sprintf("%s TP%d · %d ranks", spec, tp, nproc)
	host := m.d.Host
	em := &phases.Emitter{Out: m.d.Session.Sink(), Now: m.d.Now}
	cfg := nccl.Config{Host: host, Torchrun: c.NCCL.Torchrun, Python: innerPython(c.Micro.Python), NProc: nproc, Batch: c.NCCL.Batch, Force: force}
	return tea.Batch(func() tea.Msg {
		mc, err := model.Resolve(ctx, host, spec)
		if err == nil {
			cfg.Plan, err = model.Build(mc, model.Options{TP: tp, EP: c.Model.EP, Batch: c.NCCL.Batch})
		}
		if err != nil {
			return doneMsg{run: run, err: err}
		}
		params := map[string]any{"model": spec, "tp": tp, "nproc": nproc, "torchrun": cfg.Torchrun, "batch": cfg.Plan.Batch,
			"allreduce_per_step": cfg.Plan.AllReduce.PerStep}
		em.Emit(ctx, phases.KindPhaseStarted, &phases.PhaseStarted{Name: phases.NCCL, Params: params})
		err = nccl.Run(ctx, cfg, em)
		fin := &phases.PhaseFinished{Name: phases.NCCL}
		if err != nil {
			fin.Err = err.Error()
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
		em.Emit(fctx, phases.KindPhaseFinished, fin)
		fcancel()
		return doneMsg{run: run, err: err}
	})
}

// innerPython is the interpreter torchrun starts for each rank: the last
// word of the campaign's Python prefix ("docker exec -i vllm python3" gives
// python3).
func innerPython(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) == 0 {
		return "python3"
	}
	return f[len(f)-1]
}

// stop is the c key.
func (m *Model) stop() tea.Cmd {
	switch m.state {
	case running:
		m.cancel()
		m.state = cancelling
		return common.Status("nccl: cancelling (the script is stopped on the host)")
	case cancelling:
		return common.Status("nccl: already cancelling")
	case stoppingServer:
		return common.Status("nccl: the server is being stopped; wait for it")
	}
	return common.Status("nccl: nothing is running")
}

func (m *Model) finish(msg doneMsg) tea.Cmd {
	if msg.run != m.run {
		return nil
	}

	wasCancel := m.state == cancelling
	m.state, m.cancel = idle, nil
	var busy *pyrun.BusyError
	switch {
	case msg.err == nil:
		m.done = true
		return common.Status("nccl: done")
	case errors.As(msg.err, &busy):
		m.busy = busy
		m.msg = ""
		return common.Status("nccl: the GPUs are busy: x stops the server and runs, f runs anyway")
	case wasCancel:
		m.msg = "cancelled: the results so far are kept"
		return common.Status("nccl: " + m.msg)
	}
	m.msg, m.failed = msg.err.Error(), true
	return common.Error(fmt.Errorf("nccl: %w", msg.err))
}

// stopServer is the x key after a busy start: stop the serving engine the
// way the Load phase does (its process group, or its container), then run.
func (m *Model) stopServer() tea.Cmd {
	if m.Busy() {
		return nil
	}
	m.state = stoppingServer
	srv := &load.Server{Host: m.d.Host, Settings: m.d.Campaign.Server,
		Emitter: &phases.Emitter{Out: m.d.Session.Sink(), Now: m.d.Now}}
	ctx := m.parent()
	return tea.Batch(common.Status("nccl: stopping the server to free the GPUs"), func() tea.Msg {
		return serverStoppedMsg{err: srv.Stop(ctx)}
	})
}

func (m *Model) serverStopped(msg serverStoppedMsg) tea.Cmd {
	m.state = idle
	if msg.err != nil {
		m.msg, m.failed = "stopping the server: "+msg.err.Error(), true
		return common.Error(errors.New(m.msg))
	}
	m.busy = nil
	return m.start(false)
}

package loadpane

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/common"
)

var errNoServer = errors.New("no host or campaign: the server cannot be started or stopped from here")

// key maps a key press to an action.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	if m.confirm != nil {
		switch {
		case key.Matches(msg, m.keys.Yes):
			c := m.confirm
			m.confirm = nil
			return c.run()
		case key.Matches(msg, m.keys.No):
			m.confirm = nil
			return common.Status("cancelled")
		}
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Log):
		m.fullLog = !m.fullLog
		m.log.Reset()
	case m.fullLog && key.Matches(msg, m.keys.Back):
		m.fullLog = false
		m.log.Reset()
	case m.fullLog && m.log.Key(m.d.Keys, msg):
	case key.Matches(msg, m.keys.Start):
		return m.start()
	case key.Matches(msg, m.keys.Stop):
		return m.stop()
	case key.Matches(msg, m.keys.Restart):
		return m.restart()
	case key.Matches(msg, m.keys.Diagnose):
		return m.diagnose()
	case key.Matches(msg, m.keys.Expand):
		m.expanded = !m.expanded
	}
	return nil
}

// logRows is how many log lines the full log shows (title and footer aside).
func (m *Model) logRows() int {
	h := m.h
	if h <= 0 {
		h = 19
	}
	return max(1, h-2)
}

func (m *Model) ready() error {
	if m.server == nil || m.d.Ctx == nil {
		return errNoServer
	}
	if m.op != "" {
		return fmt.Errorf("the server is already %s", m.op)
	}
	return nil
}

// opCtx is the context of the pane's own starts, stops and restarts: the
// server's events for them go to the session through the pane's emitter.
func (m *Model) opCtx() context.Context {
	return load.WithEmitter(m.d.Ctx, m.emitter())
}

func (m *Model) start() tea.Cmd {
	if err := m.ready(); err != nil {
		return common.Error(err)
	}
	if m.serving() {
		return common.Status("the server is already serving")
	}
	m.op = "starting"
	s, ctx := m.server, m.opCtx()
	return func() tea.Msg {
		_, err := s.Start(ctx, nil, nil)
		return opDoneMsg{op: "start", err: err}
	}
}

func (m *Model) stop() tea.Cmd {
	if err := m.ready(); err != nil {
		return common.Error(err)
	}
	run := func() tea.Cmd {
		m.op = "stopping"
		s, ctx := m.server, m.opCtx()
		return func() tea.Msg {
			return opDoneMsg{op: "stop", err: s.Stop(ctx)}
		}
	}
	if m.serving() {
		// Ask only about a server profdeck launched, named by its pid;
		// another is never stopped, and what holds the GPUs is said.
		m.op = "checking"
		s, ctx := m.server, m.opCtx()
		return func() tea.Msg {
			if pid, ours := s.Running(ctx); ours {
				return stopCheckMsg{ours: true, text: stopQuestion(pid, s.OthersHolding(ctx, pid)), run: run}
			}
			return stopCheckMsg{text: "the server serving was not launched by profdeck (its pid file names no live launch): it is not stopped; " + s.GPUHolders(ctx)}
		}
	}
	return run()
}

// stopQuestion asks before stopping the launch of profdeck's (process
// group pid), naming what else holds the GPUs (pid, user, command): the
// stop leaves those, so the GPUs are not all freed.
func stopQuestion(pid int, others []load.Holder) string {
	if len(others) == 0 {
		return fmt.Sprintf("Stop the server profdeck launched (process group %d) and free the GPUs?", pid)
	}
	names := make([]string, len(others))
	for i, h := range others {
		names[i] = h.String()
	}
	return fmt.Sprintf("Stop the server profdeck launched (process group %d)? Not stopped, also holding the GPUs: %s",
		pid, strings.Join(names, "; "))
}

// stopCheckMsg is what a stop of a serving server found: a launch of
// profdeck's to confirm (text the question), or none (text says what
// holds the GPUs).
type stopCheckMsg struct {
	ours bool
	text string
	run  func() tea.Cmd
}

func (m *Model) stopChecked(msg stopCheckMsg) tea.Cmd {
	m.op = ""
	if !msg.ours {
		return common.Error(errors.New(msg.text))
	}
	m.confirm = &confirmation{prompt: msg.text, run: msg.run}
	return nil
}

func (m *Model) restart() tea.Cmd {
	if err := m.ready(); err != nil {
		return common.Error(err)
	}
	version := m.version
	if m.d.Campaign != nil && m.d.Campaign.Server.Version != "" {
		version = m.d.Campaign.Server.Version
	}
	dir := m.server.Settings.ProfilerDir
	engine := m.engine
	if engine == "" && m.d.Campaign != nil {
		engine = m.d.Campaign.ServerEngine()
	}
	flags, env := load.ProfilerArgsFor(engine, version, dir)
	how := "--profiler-config"
	for k := range env {
		how = k // VLLM_TORCH_PROFILER_DIR or SGLANG_TORCH_PROFILER_DIR
	}
	cost := "a full reload"
	if at, ok := m.milestones["ready"]; ok && at > 0 {
		cost += " (last load " + units.Duration(at) + ")"
	}
	m.confirm = &confirmation{
		prompt: fmt.Sprintf("Restart with the torch profiler? It costs %s; uses %s", cost, how),
		run: func() tea.Cmd {
			m.op = "restarting"
			s, ctx := m.server, m.opCtx()
			return func() tea.Msg {
				_, err := s.Restart(ctx, flags, env)
				return opDoneMsg{op: "restart", err: err}
			}
		},
	}
	return nil
}

// host is the first host seen (the pane's own).
func (m *Model) host() string {
	if len(m.hosts) > 0 {
		return m.hosts[0]
	}
	return ""
}

// diagnose is the d key: the watcher samples the server's processes, GPUs
// and stacks and says why it is stuck (the result arrives as an event).
func (m *Model) diagnose() tea.Cmd {
	if m.watcher == nil {
		return common.Error(errors.New("diagnose: no host or campaign"))
	}
	m.diagnosing = true
	m.watcher.Diagnose()
	return common.Status("diagnosing: sampling the server's processes, GPUs and stacks for a few seconds…")
}

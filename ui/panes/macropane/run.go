package macropane

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/ui/common"
)

// sweepConfig is the campaign's sweep reaching the server through the host
// (campaign.SweepThrough); done releases the scraper's idle connection once
// the sweep has ended.
func (m *Model) sweepConfig() (cfg macro.Config, done func()) {
	return m.d.Campaign.SweepThrough(m.d.Host, m.d.APIKey)
}

// agentsMsg ends the opening of the campaign's load agents' hosts.
type agentsMsg struct {
	members []fleet.Member
	release func()
	err     error
}

// start launches a sweep; the engine brackets its run in the session.
// The load agents' hosts, when the campaign names some, are opened first,
// off the screen's loop (an SSH host takes a while to answer).
func (m *Model) start() tea.Cmd {
	if m.d.Campaign == nil || m.d.Session == nil {
		return common.Error(errors.New("macro: no campaign loaded"))
	}
	c := m.d.Campaign
	if len(c.Macro.Loadgen.Hosts) == 0 {
		return m.launch(nil, func() {})
	}
	m.opening, m.dirty = true, true
	ctx, host := m.d.Ctx, m.d.Host
	if ctx == nil {
		ctx = context.Background()
	}
	return tea.Batch(common.Status("macro sweep: opening the load agents' hosts "+c.Macro.Loadgen.Hosts.String()),
		func() tea.Msg {
			members, release, err := c.OpenAgents(ctx, host, c.MetricsURL())
			return agentsMsg{members: members, release: release, err: err}
		})
}

// agentsOpened starts the sweep over the agents just opened.
func (m *Model) agentsOpened(msg agentsMsg) tea.Cmd {
	m.opening, m.dirty = false, true
	if msg.err != nil {
		return common.Error(fmt.Errorf("macro sweep: %w", msg.err))
	}
	return m.launch(msg.members, msg.release)
}

// launch starts the sweep's engine (campaignrun.SweepEngine: over the
// agents when there are some); closeAgents closes their hosts once it
// has run.
func (m *Model) launch(agents []fleet.Member, closeAgents func()) tea.Cmd {
	cfg, release := m.sweepConfig()
	c := m.d.Campaign
	sw, err := campaignrun.SweepEngine(cfg, c.Macro.Loadgen.Mode, onhost.Options{Host: m.d.Host, MetricsURL: c.MetricsURL()}, agents)
	if err != nil {
		release()
		closeAgents()
		return common.Error(fmt.Errorf("macro sweep: %w", err))
	}
	m.resetRun()
	m.sweep, m.stopping, m.planned, m.cutOff = sw, false, sw.Config().Concurrency, false
	m.chartsDirty = true
	where := ""
	switch sw.(type) {
	case *onhost.Sweep:
		where = " (load generator on host " + m.d.Host.Name() + ")"
	case *fleet.Engine:
		where = fmt.Sprintf(" over %d load agents (%s)", len(agents), c.Macro.Loadgen.Hosts)
	}
	return tea.Batch(common.Status("macro sweep started against "+remote.MaskURL(cfg.URL)+where),
		m.r.Start(m.d, func(ctx context.Context, em *phases.Emitter) error {
			defer closeAgents()
			defer release()
			_, err := sw.Run(ctx, em)
			return err
		}))
}

// startStop is the s key: start when idle, ask to stop when running, and
// cut in-flight requests short when asked twice.
func (m *Model) startStop() tea.Cmd {
	switch {
	case m.r.State == common.RunRunning && !m.stopping:
		m.sweep.Stop()
		m.stopping, m.dirty = true, true
		return common.Status("stopping the sweep: requests in flight finish (s again cuts them short)")
	case m.r.State == common.RunRunning:
		m.r.Cancel()
		m.dirty = true
		return common.Status("cutting the sweep short")
	case m.r.State == common.RunCancelling:
		return nil
	case m.opening:
		return common.Status("opening the load agents' hosts: the sweep starts once they answer")
	case m.r.Elsewhere():
		return common.Status("a sweep started elsewhere (the campaign run) is under way; its levels show here")
	}
	return m.start()
}

// steerable is nil when the steering keys act now, else why not.
func (m *Model) steerable() tea.Cmd {
	switch {
	case m.r.State == common.RunRunning && !m.stopping && m.sweep != nil:
		return nil
	case m.r.Active():
		return common.Status("the sweep is stopping")
	}
	return common.Status("no sweep running (s starts one)")
}

// paused is whether the sweep is paused: as asked here, until the
// engine's next tick says so itself.
func (m *Model) paused() bool {
	if m.asked.pause != nil {
		return *m.asked.pause
	}
	return m.cur != nil && m.cur.Tick.Paused
}

func (m *Model) pause() tea.Cmd {
	if cmd := m.steerable(); cmd != nil {
		return cmd
	}
	m.dirty = true
	p := !m.paused()
	m.asked.pause = &p
	if !p {
		m.sweep.Resume()
		return common.Status("sweep resumed")
	}
	m.sweep.Pause()
	return common.Status("sweep paused: no new requests; those in flight finish")
}

// steer doubles or halves the live concurrency, from the level's
// concurrency as the engine last reported it.
func (m *Model) steer(double bool) tea.Cmd {
	if cmd := m.steerable(); cmd != nil {
		return cmd
	}
	c := m.asked.conc
	if m.cur != nil && c == 0 {
		c = m.cur.Started.Concurrency
		if m.cur.HaveTick && m.cur.Tick.Concurrency > 0 {
			c = m.cur.Tick.Concurrency
		}
	}
	if c == 0 {
		return common.Status("no level running yet, or an open-loop rate level: concurrency is not set")
	}
	n := max(1, c/2)
	if double {
		n = c * 2
	}
	if n == c {
		return common.Status(fmt.Sprintf("concurrency stays at %d", c))
	}
	m.sweep.SetConcurrency(n)
	why := ""
	if got := m.sweep.Concurrency(); got > 0 && got != n {
		why = fmt.Sprintf("; %d asked, %s", n, heldWhy(got > n))
		n = got
	}
	if n == c {
		return common.Status(fmt.Sprintf("concurrency stays at %d%s", c, why))
	}
	m.asked.conc = n
	m.dirty = true
	return common.Status(fmt.Sprintf("concurrency %d → %d for this level (nothing in flight is dropped%s)", c, n, why))
}

// heldWhy says why the sweep holds another concurrency than asked: more,
// the least its load agents hold (one stream each); fewer, the most its
// open-file limit allows (a socket per request).
func heldWhy(more bool) string {
	if more {
		return "the least its load agents hold (one stream each)"
	}
	return "the most the open-file limit allows (a socket per request)"
}

// ended says how the sweep that just ended went; every event of it has
// arrived by now.
func (m *Model) ended() tea.Cmd {
	m.sweep = nil
	m.cur = nil
	m.dirty = true
	switch m.r.State {
	case common.RunFailed:
		return common.Error(fmt.Errorf("macro sweep: %w", m.r.Err))
	case common.RunCancelled:
		if len(m.levels) == 0 {
			return common.Status("macro sweep cancelled")
		}
	}
	text := fmt.Sprintf("macro sweep done: %d levels", len(m.levels))
	if m.plateau != nil {
		text += fmt.Sprintf(", plateau at C=%d", m.plateau.Concurrency)
	}
	switch {
	case m.r.State == common.RunCancelled:
		text += " (cancelled)"
	case m.stopping:
		text += " (stopped by the operator)"
	case m.plateau != nil && len(m.levels) < len(m.planned):
		text += " (plateau)"
	}
	return common.Status(text)
}

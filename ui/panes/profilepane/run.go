package profilepane

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/ui/common"
)

// downHelp is what the operator is told when no server answers: start it
// from pane 1, with the profiler, and what that costs.
func (m *Model) downHelp() string {
	return "No server answers at " + m.serverURL() + ". Start it from the Server/Load pane (1, then s), " +
		"or r there to restart it with the torch profiler: " + m.reloadCost() + ". Then press s here."
}

// profilerHelp is disabledHelp with the reload's cost from the journal.
func (m *Model) profilerHelp() string {
	return "Profiling is not enabled on this server (POST /start_profile answers 404). " +
		"Restart it with the torch profiler from the Server/Load pane (1, then r): that costs " +
		m.reloadCost() + ". Then press s here."
}

// reloadCost says how long a reload takes: the last load's time to ready,
// or that it takes as long as the first load.
func (m *Model) reloadCost() string {
	if m.readyS > 0 {
		return "a full reload of the weights, " + units.Duration(m.readyS) + " last time"
	}
	return "a full reload of the weights, which takes as long as the first load"
}

func (m *Model) serverURL() string {
	if m.d.Campaign != nil && m.d.Campaign.Server.URL != "" {
		return remote.MaskURL(m.d.Campaign.Server.URL)
	}
	return "the server's URL"
}

// config builds the capture from the campaign: the server, the profiler
// directory, N requests at C=1 and at the sweep's plateau when there is one.
func (m *Model) config() profile.Config {
	c := m.d.Campaign
	cfg := c.ProfileConfig(m.d.APIKey)
	cfg.Host = m.d.Host
	// The pane shows where a decode step's GPU time goes: decode-only
	// windows. The campaign run adds the steady windows its budget needs.
	cfg.Steady = false
	cfg.Load = onhost.LoadFor(c.Macro.Loadgen.Mode, onhost.Options{Host: m.d.Host})
	if p := m.plateau(); p > 1 {
		cfg.Concurrency = append(cfg.Concurrency, p)
	}
	return cfg
}

// plateau is the concurrency where the latest sweep for the campaign's
// model, TP and launch stopped growing (0 when none did, or when it is not
// a level a capture takes: a journal may say anything).
func (m *Model) plateau() int {
	p := m.sweep.plateau.Plateau()
	if profile.CheckLevels([]int{p}) != nil {
		return 0
	}
	return p
}

// tpotAt is the mean TPOT (ms) the macro sweep last measured at
// concurrency c (0 when none), the TPOT the budget splits: a window is
// compared with the TPOT of its own level.
func (m *Model) tpotAt(c int) float64 { return m.sweep.tpot[c] }

// start launches a capture in a goroutine emitting into the session.
func (m *Model) start() tea.Cmd {
	if m.Busy() {
		return common.Status("a capture is already running (c cancels it)")
	}
	if m.r.Elsewhere() {
		return common.Status("a capture started elsewhere (the campaign run) is under way; its steps show here")
	}
	if m.d.Campaign == nil || m.d.Session == nil || m.d.Host == nil {
		return common.Error(errors.New("profile: no campaign, session or host"))
	}
	cfg := m.config()
	m.steps, m.sum, m.levels, m.failed, m.msg = nil, nil, nil, nil, ""
	m.kernels.Reset()
	m.dirty = true
	return tea.Batch(common.Status("profile capture started against "+remote.MaskURL(cfg.URL)),
		m.r.Start(m.d, func(ctx context.Context, em *phases.Emitter) error {
			_, err := profile.Capture(ctx, cfg, em)
			return err
		}))
}

// stop is the c key: cancel the capture (stop_profile is still sent).
func (m *Model) stop() tea.Cmd {
	switch {
	case m.r.Cancel():
		m.dirty = true
		return common.Status("cancelling: stop_profile is sent so the server stops recording")
	case m.r.State == common.RunCancelling:
		return common.Status("already cancelling: waiting briefly for stop_profile")
	}
	return common.Status("no capture is running")
}

// ended says how the capture that just ended went; its summary (or why it
// failed) has arrived as an event by now.
func (m *Model) ended() tea.Cmd {
	err := m.r.Err
	switch {
	case m.r.State == common.RunFinished && m.sum != nil:
		return common.Status(fmt.Sprintf("profile captured: communication %.1f%% of GPU time", 100*m.sum.CommunicationShare))
	case m.r.State == common.RunFinished:
		return common.Status("profile captured")
	case m.r.State == common.RunCancelled:
		m.msg = "Capture cancelled; stop_profile was sent so the server stops recording."
		return common.Status("profile capture cancelled")
	case errors.Is(err, profile.ErrProfilerDisabled):
		m.msg = m.profilerHelp()
		return common.Status("profiling is not enabled on the server: restart it with the profiler from the Load pane (r)")
	case errors.Is(err, profile.ErrServerDown):
		m.msg = m.downHelp()
		return common.Status("no server answers: start it from the Load pane (1, then s or r)")
	}
	m.msg = "Capture failed: " + err.Error()
	return common.Error(fmt.Errorf("profile: %w", err))
}

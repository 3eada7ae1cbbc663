package macropane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/ui/common"
)

// doneMsg says a sweep this pane started has ended.
type doneMsg struct {
	run int
	res *macro.Result
	err error
}

// runState is where the pane's sweep stands.
type runState int

const (
	idle runState = iota
	running
	stopping // asked to stop: in-flight requests finish
	cutting  // context cancelled: in-flight requests are cut short
	finished
)

// sweepConfig builds the engine's configuration from the campaign: the
// server's URL and API key, the macro section's parameters, a client that
// dials through the host (so a server bound to the GPU host's localhost is
// reachable) and a scraper of the server's /metrics. done releases the
// scraper's idle connection once the sweep has ended.
func (m *Model) sweepConfig() (cfg macro.Config, done func()) {
	c := m.d.Campaign
	cfg = c.SweepConfig(m.d.APIKey)
	client := &http.Client{}
	if m.d.Host != nil {
		cfg.Dial = m.d.Host.DialContext
		client.Transport = &http.Transport{DialContext: m.d.Host.DialContext, MaxIdleConns: 2}
	}
	cfg.Scraper = servermetrics.NewScraper(c.MetricsURL(), client)
	return cfg, client.CloseIdleConnections
}

// start launches a sweep in a goroutine emitting into the session.
func (m *Model) start() tea.Cmd {
	if m.d.Campaign == nil || m.d.Session == nil {
		return common.Error(errors.New("macro: no campaign loaded"))
	}
	cfg, release := m.sweepConfig()
	sw, err := macro.NewSweep(cfg)
	if err != nil {
		return common.Error(fmt.Errorf("macro sweep: %w", err))
	}
	parent := m.d.Ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	m.resetRun()
	m.sweep, m.cancel, m.state = sw, cancel, running
	m.run++
	run := m.run
	em := &phases.Emitter{Out: m.d.Session.Sink(), Now: m.d.Now}
	params := map[string]any{"url": remote.MaskURL(cfg.URL), "concurrency": sw.Config().Concurrency,
		"requests": cfg.Requests, "input_len": sw.Config().InputLen, "output_len": sw.Config().OutputLen}
	m.chartsDirty = true
	return tea.Batch(common.Status("macro sweep started against "+remote.MaskURL(cfg.URL)), func() tea.Msg {
		em.Emit(ctx, phases.KindPhaseStarted, &phases.PhaseStarted{Name: phases.Macro, Params: params})
		res, err := sw.Run(ctx, em)
		release()
		fin := &phases.PhaseFinished{Name: phases.Macro}
		if err != nil && !errors.Is(err, context.Canceled) {
			fin.Err = err.Error()
		}
		// The phase's end is journalled even when the pane's context ended.
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
		em.Emit(fctx, phases.KindPhaseFinished, fin)
		fcancel()
		return doneMsg{run: run, res: res, err: err}
	})
}

// startStop is the s key: start when idle, ask to stop when running, and
// cut in-flight requests short when asked twice.
func (m *Model) startStop() tea.Cmd {
	switch m.state {
	case running:
		m.sweep.Stop()
		m.state = stopping
		m.dirty = true
		return common.Status("stopping the sweep: requests in flight finish (s again cuts them short)")
	case stopping:
		m.cancel()
		m.state = cutting
		m.dirty = true
		return common.Status("cutting the sweep short")
	case cutting:
		return nil
	}
	return m.start()
}

// notRunning says why a steering key does nothing now.
func (m *Model) notRunning() tea.Cmd {
	if m.state == stopping || m.state == cutting {
		return common.Status("the sweep is stopping")
	}
	return common.Status("no sweep running (s starts one)")
}

func (m *Model) pause() tea.Cmd {
	if m.sweep == nil || m.state != running {
		return m.notRunning()
	}
	m.dirty = true
	if m.sweep.Paused() {
		m.sweep.Resume()
		return common.Status("sweep resumed")
	}
	m.sweep.Pause()
	return common.Status("sweep paused: no new requests; those in flight finish")
}

// steer doubles (factor 2) or halves (factor ½) the live concurrency.
func (m *Model) steer(double bool) tea.Cmd {
	if m.sweep == nil || m.state != running {
		return m.notRunning()
	}
	c := m.sweep.Concurrency()
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
	m.dirty = true
	return common.Status(fmt.Sprintf("concurrency %d → %d for this level (nothing in flight is dropped)", c, n))
}

// finish handles the end of a sweep.
func (m *Model) finish(msg doneMsg) tea.Cmd {
	if msg.run != m.run {
		return nil
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.sweep, m.cancel = nil, nil
	m.state = finished
	m.cur = nil
	m.dirty = true
	if msg.err != nil && !errors.Is(msg.err, context.Canceled) {
		m.runErr = msg.err.Error()
		return common.Error(fmt.Errorf("macro sweep: %w", msg.err))
	}
	if msg.res == nil {
		return common.Status("macro sweep cancelled")
	}
	text := fmt.Sprintf("macro sweep done: %d levels", len(msg.res.Levels))
	if msg.res.Plateau != nil {
		text += fmt.Sprintf(", plateau at C=%d", msg.res.Plateau.Concurrency)
	}
	if msg.res.Stopped != "" {
		text += " (" + msg.res.Stopped + ")"
	}
	return common.Status(text)
}

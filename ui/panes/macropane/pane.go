// Package macropane is the cockpit's Macro pane: the concurrency sweep
// live (per-second TPOT, TTFT and output throughput as sparklines, the
// server's own /metrics figures on the same time axis, the level's
// progress and a table of finished levels), the plateau and the client's
// self-audit named in words, and keys to start, stop, pause and steer the
// load and to drop markers on the timeline.
package macropane

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// Model is the Macro pane.
type Model struct {
	// inRun: the campaign's run is under way in this session (it starts
	// the sweep at its step; the idle pane says so, not "press s").
	inRun bool
	d     *common.Deps
	keys  keyMap
	w, h  int
	// variants: the campaign's server variants, from their events.
	variants Board

	// The sweep this pane runs: the run's state, and the engine to steer.
	r        common.RunControl
	sweep    macro.Engine
	stopping bool  // asked to stop: the requests in flight finish
	opening  bool  // opening the load agents' hosts; the sweep starts next
	planned  []int // the levels the sweep was started with
	cutOff   bool  // the sweep shown started in the journal and never finished
	// asked is what the keys asked of the engine that its ticks do not
	// show yet: a pause or resume, and the level's new concurrency.
	asked struct {
		pause *bool
		conc  int
	}

	// What the events said.
	levels     []phases.LevelResult
	plateau    *phases.Plateau
	slo        *phases.SLOMet
	search     *phases.Search // the SLO search as it stands
	audits     []phases.ClientBound
	cur        *level
	warns      []string                // the sweep's and its levels' warnings, in order
	warnTop    string                  // the first (weightiest) warning of the latest to come
	errs       []phases.FailureExample // distinct errors, counts summed over levels
	errLevel   []string                // the level each error was first seen in
	server     phases.ServerStats
	haveServer bool
	path       *phases.MacroPath // how the load reaches the server
	pathWarn   string            // what the path does to the figures, with the fix

	// Per-second samples, one per tick, and what is pinned to them;
	// levelTicks counts the ticks of the level now running (none: its
	// series, when it comes, draws it).
	samples, levelTicks                      int
	readBack                                 bool // the sweep's seconds came from its series
	newSweep                                 bool // a sweep started: its first result starts a new timeline
	tpot50, tpot99, ttft, toks               ring
	srvRun, srvQueue                         ring // server: running, and running+waiting
	marks                                    []mark
	tpotChart, ttftChart, tokChart, srvChart *chart
	gpu                                      gpuStrip // the GPUs' power, utilisation and link traffic

	// Marker input.
	typing bool
	input  textinput.Model

	bar       components.Bar
	levelList components.List // the levels table, following the newest

	// Render caches: charts are drawn when samples arrive, the table when
	// levels do, and the whole view when anything changed.
	chartsDirty, tableDirty, dirty bool
	tableLines                     []string
	view                           string
}

// New builds the pane.
func New(d *common.Deps) *Model {
	s := d.Styles
	m := &Model{d: d, keys: newKeyMap(d.Keys), r: common.NewRunControl(phases.Macro), chartsDirty: true, tableDirty: true, dirty: true}
	m.tpotChart = newChart(&m.tpot50, &m.tpot99, s.Chart, s.ChartAlt, 1)
	m.ttftChart = newChart(&m.ttft, nil, s.Chart, s.ChartAlt, 1)
	m.tokChart = newChart(&m.toks, nil, s.Good, s.ChartAlt, 1)
	m.srvChart = newChart(&m.srvRun, &m.srvQueue, s.Subtle, s.Warn, 1)
	m.gpu.charts = [3]*chart{newChart(&m.gpu.power, nil, s.Warn, s.Warn, 1),
		newChart(&m.gpu.util, nil, s.Chart, s.Chart, 1), newChart(&m.gpu.link, nil, s.ChartAlt, s.ChartAlt, 0.001)}
	for _, c := range m.gpu.charts {
		c.relative = true
	}
	m.input = textinput.New()
	m.input.Prompt = "marker: "
	m.input.Placeholder = "what changed (enter saves, esc cancels)"
	m.input.CharLimit = 80
	m.bar = components.Bar{Full: s.BarFull, Empty: s.BarEmpty}
	m.levelList.FromEnd = true
	return m
}

// Init starts the sweep only when the cockpit asks for it (the demo does);
// otherwise the operator starts it with s.
func (m *Model) Init() tea.Cmd {
	if m.d.AutoStart[phases.Macro] {
		return m.start()
	}
	return nil
}

// Typing is true while the marker input has focus.
func (m *Model) Typing() bool { return m.typing }

// Busy is true while a sweep runs.
func (m *Model) Busy() bool { return m.r.Active() }

// SetSize sets the pane's content area.
func (m *Model) SetSize(w, h int) {
	if w == m.w && h == m.h {
		return
	}
	m.w, m.h = w, h
	m.chartsDirty, m.tableDirty, m.dirty = true, true, true
	m.refresh()
}

// Update handles event batches, the clock, the end of a sweep and keys.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	cmd := m.update(msg)
	m.refresh()
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.EventsMsg:
		var cmd tea.Cmd
		for _, ev := range msg.Events {
			if m.apply(ev) {
				m.chartsDirty = true
			}
			// A journal's events run nothing now: a sweep it left
			// unfinished is not one under way elsewhere.
			if !msg.Replayed && m.r.Event(ev) {
				cmd = m.ended()
			}
			if !msg.Replayed {
				m.followRun(ev)
			}
		}
		m.noteJournal(msg)
		if len(msg.Events) > 0 {
			m.dirty = true
		}
		return cmd
	case tea.KeyPressMsg:
		return m.key(msg)
	case markerMsg:
		return m.markerSaved(msg)
	case agentsMsg:
		return m.agentsOpened(msg)
	default:
		if cmd, ended, mine := m.r.Update(msg); mine {
			if ended {
				return m.ended()
			}
			return cmd
		}
		if m.typing {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(msg)
			m.dirty = true
			return cmd
		}
	}
	return nil
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	if m.typing {
		return m.typeKey(msg)
	}
	switch {
	case key.Matches(msg, m.keys.StartStop):
		return m.startStop()
	case key.Matches(msg, m.keys.Pause):
		return m.pause()
	case key.Matches(msg, m.keys.Double):
		return m.steer(true)
	case key.Matches(msg, m.keys.Halve):
		return m.steer(false)
	case key.Matches(msg, m.keys.Mark):
		m.typing = true
		m.input.Reset()
		m.input.SetWidth(max(10, m.w-len(m.input.Prompt)-2))
		m.dirty = true
		return m.input.Focus()
	default:
		if m.levelList.Key(m.d.Keys, msg) {
			m.tableDirty, m.dirty = true, true
		}
	}
	return nil
}

// typeKey handles a key while the marker input is open.
func (m *Model) typeKey(msg tea.KeyPressMsg) tea.Cmd {
	m.dirty = true
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.closeInput()
		return common.Status("marker cancelled")
	case key.Matches(msg, m.keys.Save):
		label := strings.TrimSpace(m.input.Value())
		m.closeInput()
		if label == "" {
			return common.Status("empty marker not saved")
		}
		return m.saveMarker(label)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

func (m *Model) closeInput() {
	m.typing = false
	m.input.Blur()
	m.input.Reset()
}

// markerMsg says whether a marker was journalled.
type markerMsg struct {
	label string
	err   error
}

// saveMarker journals the marker in a command; the chart pins it when the
// session hands the recorded marker back, like every other event.
func (m *Model) saveMarker(label string) tea.Cmd {
	sess, now := m.d.Session, time.Now
	if m.d.Now != nil {
		now = m.d.Now
	}
	at := now()
	return func() tea.Msg {
		if sess == nil {
			return markerMsg{label: label, err: errors.New("no session")}
		}
		ev := phases.New(at, phases.KindNotesMarker, phases.Marker{Label: label, Pane: phases.Macro})
		return markerMsg{label: label, err: sess.Record(ev)}
	}
}

// markerSaved tells the operator how the marker's journalling went.
func (m *Model) markerSaved(msg markerMsg) tea.Cmd {
	if msg.err != nil {
		return common.Error(fmt.Errorf("marker %q not saved: %w", msg.label, msg.err))
	}
	return common.Status("marker saved: " + msg.label)
}

// followRun notes the campaign's run starting and ending.
func (m *Model) followRun(ev phases.Event) {
	switch ev.Data.(type) {
	case phases.RunStarted:
		m.inRun = true
	case phases.RunFinished:
		m.inRun = false
	}
}

// Package micropane is the cockpit's Micro pane: it runs the micro phase
// (every GEMM of one decode step timed on the GPU host) and shows the GEMM
// table of one batch size, sorted by its share of the step, with the step
// totals of every batch size below.
package micropane

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// keyMap holds the pane's own keys.
type keyMap struct {
	gpupane.Keys
	Order, PrevM, NextM key.Binding
}

func newKeys() keyMap {
	return keyMap{
		Keys:  gpupane.NewKeys(),
		Order: key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "sort order")),
		PrevM: key.NewBinding(key.WithKeys("h", "left"), key.WithHelp("h/←", "smaller M")),
		NextM: key.NewBinding(key.WithKeys("l", "right"), key.WithHelp("l/→", "larger M")),
	}
}

// Model is the Micro pane.
type Model struct {
	d     *common.Deps
	keys  keyMap
	w, h  int
	res   micro.Result
	r     gpupane.Runner // the run and its outcome
	order int
	mi    int             // index of the shown batch size in ms
	rows  components.List // the GEMM table

	// What the view draws, worked out when the results, the batch size or
	// the order change rather than on every frame.
	ms     []int               // the batch sizes with results
	shown  []phases.GEMMResult // the GEMMs of ms[mi], in order
	sum    float64             // Σ step µs of shown
	served string              // the served dtype of a GEMM timed in BF16, "" if none

	// The view is drawn once per change (a batch of events, a key that
	// moves something, a message of the run, a resize) and View returns
	// it; nothing on it runs on the clock. draws counts the drawings.
	view  string
	dirty bool
	draws int
}

// New builds the pane.
func New(d *common.Deps) *Model {
	return &Model{d: d, keys: newKeys(), r: gpupane.NewRunner(d, phases.Micro, "micro"), dirty: true}
}

// Init starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Typing is false: this pane has no text input.
func (m *Model) Typing() bool { return false }

// Busy is true while the script (or the server stop before it) runs.
func (m *Model) Busy() bool { return m.r.Active() }

// SetSize records the pane's size.
func (m *Model) SetSize(w, h int) {
	if w != m.w || h != m.h {
		m.w, m.h, m.dirty = w, h, true
		m.clamp()
	}
}

// Update handles keys, the phase's events and the end of a run; what
// changes the view marks it to be drawn again (the clock does not).
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	cmd, changed := m.r.Route(msg, m.keys.Keys, m.start, m.add, m.key)
	if changed {
		m.changed()
	}
	return m, cmd
}

// changed works out what the view shows again and marks it to be drawn.
func (m *Model) changed() {
	m.clamp()
	m.dirty = true
}

// add folds the phase's events into the result (Update then works out
// the rows again).
func (m *Model) add(evs []phases.Event) {
	for _, e := range evs {
		m.res.Add(e)
	}
}

// key handles the pane's own keys; one that moves nothing (l at the
// largest M, k at the top) leaves the view as drawn.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	order, mi, offset := m.order, m.mi, m.rows.Offset
	switch {
	case key.Matches(msg, m.keys.Order):
		m.order = micro.NextOrder(m.order)
		m.rows.Reset()
	case key.Matches(msg, m.keys.PrevM):
		if m.mi > 0 {
			m.mi--
			m.rows.Reset()
		}
	case key.Matches(msg, m.keys.NextM):
		if m.mi < len(m.ms)-1 {
			m.mi++
			m.rows.Reset()
		}
	default:
		m.clamp()
		m.rows.Key(m.d.Keys, msg)
	}
	m.clamp()
	if m.order != order || m.mi != mi || m.rows.Offset != offset {
		m.dirty = true
	}
	return nil
}

// clamp keeps the batch-size index and the scroll inside the data, and
// works out the rows the view draws.
func (m *Model) clamp() {
	m.ms = m.res.Ms()
	if m.mi >= len(m.ms) {
		m.mi = max(0, len(m.ms)-1)
	}
	m.shown, m.sum = nil, 0
	if len(m.ms) > 0 {
		m0 := m.ms[m.mi]
		m.shown, m.sum = m.res.Rows(m0, m.order), m.res.StepSum(m0)
	}
	m.served = ""
	for _, g := range m.res.GEMMs {
		if g.Served != "" && !g.AsServed { // timed in BF16, served in another format
			m.served = g.Served
			break
		}
	}
	m.rows.SetSize(len(m.shown), m.rowsVisible())
}

// ShortHelp lists the pane's keys.
func (m *Model) ShortHelp() []key.Binding {
	if help, ok := m.r.BusyHelp(m.keys.Keys); ok {
		return help
	}
	return []key.Binding{m.keys.Start, m.keys.Cancel, m.keys.Order, m.keys.NextM}
}

// FullHelp lists the pane's keys in columns.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.d.Keys
	return [][]key.Binding{
		m.keys.Column(),
		{m.keys.Order, m.keys.PrevM, m.keys.NextM},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
	}
}

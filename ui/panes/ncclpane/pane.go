// Package ncclpane is the cockpit's NCCL pane: it runs the NCCL phase under
// torchrun on the GPU host and shows the decode step's all-reduce burst per
// batch size and the expert-parallel All-to-All by tokens per GPU, with the
// latency cliff marked.
package ncclpane

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// Model is the NCCL pane.
type Model struct {
	d    *common.Deps
	keys gpupane.Keys
	w, h int
	res  nccl.Result
	r    gpupane.Runner  // the run and its outcome
	body components.List // the tables below the head
	// lines are the tables as drawn, redone when the results, the size or
	// the run's state change rather than on every frame ("no latency
	// cliff" is said once the run finished).
	lines []string

	// The view is drawn once per change (a batch of events, a key that
	// scrolls, a message of the run, a resize) and View returns it;
	// nothing on it runs on the clock. draws counts the drawings.
	view  string
	dirty bool
	draws int
}

// New builds the pane.
func New(d *common.Deps) *Model {
	return &Model{d: d, keys: gpupane.NewKeys(), r: gpupane.NewRunner(d, phases.NCCL, "nccl"), dirty: true}
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
	cmd, changed := m.r.Route(msg, m.keys, m.start, m.add, m.key)
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

// add folds the phase's events into the result (Update then draws the
// tables again).
func (m *Model) add(evs []phases.Event) {
	for _, e := range evs {
		m.res.Add(e)
	}
}

// key scrolls the tables; a key that moves nothing (k at the top) leaves
// the view as drawn.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	offset := m.body.Offset
	m.body.Key(m.d.Keys, msg)
	if m.body.Offset != offset {
		m.dirty = true
	}
	return nil
}

// clamp draws the tables again and keeps the scroll inside them.
func (m *Model) clamp() {
	m.lines = m.bodyLines(max(m.w, 40))
	m.body.SetSize(len(m.lines), m.bodyRows())
}

// ShortHelp lists the pane's keys.
func (m *Model) ShortHelp() []key.Binding {
	if help, ok := m.r.BusyHelp(m.keys); ok {
		return help
	}
	return []key.Binding{m.keys.Start, m.keys.Cancel, m.d.Keys.Down}
}

// FullHelp lists the pane's keys in columns.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.d.Keys
	return [][]key.Binding{
		m.keys.Column(),
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
	}
}

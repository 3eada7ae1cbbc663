// Package notespane is the cockpit's Notes pane: the decode-time budget
// (how a decode step splits into all-reduce, GEMM and the rest), the
// operator's notes and markers in time order, and where and when the
// notebook was last written. It gets every journalled event.
package notespane

import (
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
)

// item is one note or marker.
type item struct {
	at     time.Time
	pane   string
	text   string
	marker bool
}

// styles are the pane's own styles, built once from the cockpit's.
type styles struct {
	title, subtle, bold, warn, bad, good lipgloss.Style
	ar, gemm, rest, marker, time         lipgloss.Style
}

// Model is the Notes pane.
type Model struct {
	d    *common.Deps
	st   styles
	w, h int

	items  []item
	inputs []phases.Event // the budget's inputs, in journal order
	budget report.BudgetResult

	// budgetView is the budget block as drawn by the last layout.
	budgetView []string

	vp     viewport.Model
	follow bool // keep the newest note in view
	now    time.Time
	nb     notebook
	// journalErr is the journal's last write failure ("" when none).
	journalErr string

	// runEvents are what the campaign checklist is folded from.
	runEvents []phases.Event
	running   bool // the campaign run started with r is under way
	hadRun    bool // the journal holds a campaign run

	// The view is drawn once per change (a batch with what the pane shows,
	// a key that scrolls, the campaign run's start and end, a resize, and
	// the clock when it changes how long ago the notebook was written) and
	// View returns it. draws counts the drawings.
	view  string
	dirty bool
	draws int
}

// notebook is the notebook's last write, as NotebookSaved events tell it.
type notebook struct {
	Path string
	At   time.Time // the last write that wrote it
	Err  string    // the last write's failure
}

// New builds the pane.
func New(d *common.Deps) *Model {
	s := d.Styles
	m := &Model{
		d: d,
		st: styles{
			title: s.Title, subtle: s.Subtle, bold: s.Bold, warn: s.Warn, bad: s.Bad, good: s.Good,
			ar: s.ChartAlt, gemm: s.Chart, rest: s.Subtle, marker: s.Warn, time: s.Subtle,
		},
		vp:     viewport.New(),
		follow: true,
		now:    d.Now(),
	}
	if d.Campaign != nil {
		m.nb.Path = d.Campaign.Notebook
	}
	m.budget = report.Budget(nil)
	m.layout()
	return m
}

// Init starts the campaign run when the cockpit was asked to (the demo).
func (m *Model) Init() tea.Cmd {
	if m.d.AutoStart[phases.Notes] {
		return m.startRun()
	}
	return nil
}

// Typing is false: the note input belongs to the root.
func (m *Model) Typing() bool { return false }

// Busy is true while the campaign run started here is under way.
func (m *Model) Busy() bool { return m.running }

// SetSize records the pane's size and lays the notes out again.
func (m *Model) SetSize(w, h int) {
	if w != m.w || h != m.h {
		m.w, m.h = w, h
		m.layout()
	}
}

// Update takes event batches, the clock, and the scrolling keys; what
// changes the view marks it to be drawn again.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		m.add(msg.Events)
		if !msg.At.IsZero() {
			m.setNow(msg.At)
		}
	case common.TickMsg:
		m.setNow(msg.At)
	case runDoneMsg:
		return m, m.runDone(msg)
	case tea.KeyPressMsg:
		if key.Matches(msg, runKey) {
			return m, m.startRun()
		}
		step, ok := m.d.Keys.Scroll(msg, m.vp.Height()/2)
		if !ok {
			return m, nil
		}
		y := m.vp.YOffset()
		if step > 0 {
			m.vp.ScrollDown(step)
		} else {
			m.vp.ScrollUp(-step)
		}
		m.follow = m.vp.AtBottom()
		if m.vp.YOffset() != y {
			m.dirty = true
		}
	}
	return m, nil
}

// setNow moves the pane's clock; the view is drawn again when that changes
// how long ago it says the notebook was written.
func (m *Model) setNow(at time.Time) {
	was := m.ago()
	m.now = at
	if m.ago() != was {
		m.dirty = true
	}
}

// add takes the notes, markers and budget inputs out of a batch.
func (m *Model) add(evs []phases.Event) {
	notes, inputs := false, false
	for _, ev := range evs {
		if keepRunEvent(ev) {
			m.runEvents = append(m.runEvents, ev)
			_, started := ev.Data.(phases.RunStarted)
			m.hadRun = m.hadRun || started
			notes = true
		}
		switch d := ev.Data.(type) {
		case phases.Note:
			m.insert(item{at: ev.Time, pane: d.Pane, text: d.Text})
			notes = true
		case phases.Marker:
			m.insert(item{at: ev.Time, pane: d.Pane, text: d.Label, marker: true})
			notes = true
		case phases.NotebookSaved:
			m.nb.Path, m.nb.Err = d.Path, d.Err
			if !d.Failed {
				m.nb.At = ev.Time
			}
			m.dirty = true
		case phases.ErrorEvent:
			if d.Where == "journal" {
				m.journalErr = d.Err
				notes = true
			}
		case phases.LevelResult, phases.Plateau, phases.NCCLBurst, phases.GEMMStep, phases.GEMMResult, phases.ProfileSummary:
			m.inputs = append(m.inputs, ev)
			inputs = true
		}
	}
	if inputs {
		m.budget = report.Budget(m.inputs)
	}
	if notes || inputs {
		m.layout()
	}
}

// insert keeps the items in time order (they usually arrive in order),
// once each: an event read from the journal at start may come again.
func (m *Model) insert(it item) {
	i := len(m.items)
	for i > 0 && m.items[i-1].at.After(it.at) {
		i--
	}
	for j := i - 1; j >= 0 && m.items[j].at.Equal(it.at); j-- {
		if x := m.items[j]; x.text == it.text && x.pane == it.pane && x.marker == it.marker {
			return
		}
	}
	m.items = append(m.items, item{})
	copy(m.items[i+1:], m.items[i:])
	m.items[i] = it
}

// ShortHelp lists the pane's keys.
func (m *Model) ShortHelp() []key.Binding {
	k := m.d.Keys
	return []key.Binding{runKey, k.Down, k.Up, k.Top, k.Bottom}
}

// FullHelp lists the pane's keys in columns.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.d.Keys
	return [][]key.Binding{{runKey}, {k.Down, k.Up, k.PageDown, k.PageUp}, {k.Top, k.Bottom}}
}

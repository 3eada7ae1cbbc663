// Package ncclppane is the cockpit's NCCL pane.
package ncclppane

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// Model is the NCCL pane.
type Model struct {
	d      *common.Deps
	w, h   int
	events int
	last   string
}

// New builds the pane.
func New(d *common.Deps) *Model { return &Model{d: d} }

// Init starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Title names the pane.
func (m *Model) Title() string { return "NCCL" }

// Typing is false: this pane has no text input.
func (m *Model) Typing() bool { return false }

// Busy is false: this pane starts no phase yet.
func (m *Model) Busy() bool { return false }

// SetSize records the pane's size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Update counts the phase's events.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	if ev, ok := msg.(common.EventsMsg); ok {
		for _, e := range ev.Events {
			if e.Phase == phases.NCCL {
				m.events++
				m.last = e.Kind
			}
		}
	}
	return m, nil
}

// View renders the pane.
func (m *Model) View() string {
	return m.d.Styles.Title.Render("NCCL") + "\n" + m.d.Styles.Subtle.Render("events: "+itoa(m.events)+" last: "+m.last)
}

// ShortHelp lists the pane's keys.
func (m *Model) ShortHelp() []key.Binding { return nil }

// FullHelp lists the pane's keys in columns.
func (m *Model) FullHelp() [][]key.Binding { return nil }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

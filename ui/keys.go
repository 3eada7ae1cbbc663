package ui

import (
	"errors"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

var errNoNotebook = errors.New("this session has no notebook")

// handleKey applies the global keys, then hands the key to the focused pane.
func (m *Model) handleKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.d.Keys
	if key.Matches(msg, k.ForceQuit) {
		if m.confirmQuit || !m.busy() {
			m.quitting = true
			return m, tea.Quit
		}
		m.confirmQuit = true
		return m, nil
	}
	if key.Matches(msg, k.Suspend) {
		return m, tea.Suspend
	}
	if m.confirmQuit {
		m.confirmQuit = false
		if key.Matches(msg, k.Confirm) {
			m.quitting = true
			return m, tea.Quit
		}
		return m, m.setStatus("quit cancelled", false)
	}
	if m.noting {
		return m.noteKey(msg)
	}
	if m.showHelp && (key.Matches(msg, k.Help) || key.Matches(msg, k.Back)) {
		m.showHelp = false
		return m, nil
	}
	if m.focused().Typing() {
		return m.toPane(msg)
	}
	switch {
	case key.Matches(msg, k.Quit):
		if m.busy() {
			m.confirmQuit = true
			return m, nil
		}
		m.quitting = true
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		return m, nil
	case key.Matches(msg, k.NextPane):
		m.active = (m.active + 1) % len(m.panes)
		return m, nil
	case key.Matches(msg, k.PrevPane):
		m.active = (m.active + len(m.panes) - 1) % len(m.panes)
		return m, nil
	case key.Matches(msg, k.Pane):
		if n := paneFor(m.table, msg.String()); n >= 0 {
			m.active = n
		}
		return m, nil
	case key.Matches(msg, k.Write):
		return m, m.saveNow()
	case key.Matches(msg, k.Note):
		m.noting = true
		m.note.Reset()
		return m, m.note.Focus()
	}
	if m.showHelp {
		// The pane is hidden behind the help: its keys must not act unseen.
		return m, nil
	}
	return m.toPane(msg)
}

func (m *Model) toPane(msg tea.Msg) (tea.Model, tea.Cmd) {
	p, cmd := m.focused().Update(msg)
	m.panes[m.active] = p
	return m, cmd
}

// noteKey edits the note being typed: enter records it, esc cancels.
func (m *Model) noteKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, noteCancel):
		m.noting = false
		m.note.Blur()
		return m, m.setStatus("note discarded", false)
	case key.Matches(msg, noteSave):
		text := strings.TrimSpace(m.note.Value())
		m.noting = false
		m.note.Blur()
		if text == "" {
			return m, nil
		}
		return m, m.recordNote(text)
	}
	var cmd tea.Cmd
	m.note, cmd = m.note.Update(msg)
	return m, cmd
}

package common

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// KeyMap holds every binding of the cockpit. Panes use the shared ones and
// define their own in their packages only for pane-specific actions.
type KeyMap struct {
	Quit      key.Binding
	ForceQuit key.Binding
	Help      key.Binding
	NextPane  key.Binding
	PrevPane  key.Binding
	Pane      key.Binding // 1–6
	Write     key.Binding
	Note      key.Binding
	Back      key.Binding
	Suspend   key.Binding
	Confirm   key.Binding
	Up        key.Binding
	Down      key.Binding
	Top       key.Binding
	Bottom    key.Binding
	PageUp    key.Binding
	PageDown  key.Binding
}

// DefaultKeyMap returns the cockpit's bindings (vim keys and arrows both).
func DefaultKeyMap() *KeyMap {
	return &KeyMap{
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit now")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		NextPane:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:  key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev pane")),
		Pane:      key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "go to pane")),
		Write:     key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "write notebook")),
		Note:      key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "add note")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Suspend:   key.NewBinding(key.WithKeys("ctrl+z"), key.WithHelp("ctrl+z", "suspend")),
		Confirm:   key.NewBinding(key.WithKeys("y", "enter"), key.WithHelp("y", "confirm")),
		Up:        key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:      key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Top:       key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:    key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		PageUp:    key.NewBinding(key.WithKeys("ctrl+u", "pgup"), key.WithHelp("ctrl+u", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("ctrl+d", "pgdown"), key.WithHelp("ctrl+d", "page down")),
	}
}

// ScrollEnd is the step Scroll returns for Top (negated) and Bottom: larger
// than any list, so the caller's clamp lands on the first or last line.
const ScrollEnd = 1 << 30

// Scroll maps the list keys to a step down the list: Down +1, Up −1,
// PageDown +page, PageUp −page, Bottom +ScrollEnd, Top −ScrollEnd. ok is
// false for any other key. Every pane with a list scrolls through it, so
// the keys mean the same everywhere; the pane clamps the result.
func (k *KeyMap) Scroll(msg tea.KeyPressMsg, page int) (step int, ok bool) {
	page = max(1, page)
	switch {
	case key.Matches(msg, k.Down):
		return 1, true
	case key.Matches(msg, k.Up):
		return -1, true
	case key.Matches(msg, k.PageDown):
		return page, true
	case key.Matches(msg, k.PageUp):
		return -page, true
	case key.Matches(msg, k.Bottom):
		return ScrollEnd, true
	case key.Matches(msg, k.Top):
		return -ScrollEnd, true
	}
	return 0, false
}

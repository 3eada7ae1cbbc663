package macropane

import (
	"charm.land/bubbles/v2/key"

	"github.com/profdeck/profdeck/ui/common"
)

// keyMap is the Macro pane's own bindings; scrolling uses the shared ones.
type keyMap struct {
	StartStop key.Binding
	Pause     key.Binding
	Double    key.Binding
	Halve     key.Binding
	Mark      key.Binding
	Up, Down  key.Binding
	Top       key.Binding
	Bottom    key.Binding
	PageUp    key.Binding
	PageDown  key.Binding
	Save      key.Binding // enter in the marker input
	Cancel    key.Binding // esc in the marker input
}

func newKeyMap(k *common.KeyMap) keyMap {
	up, down := k.Up, k.Down
	up.SetHelp("k/↑", "scroll levels")
	down.SetHelp("j/↓", "scroll levels")
	return keyMap{
		StartStop: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start/stop sweep")),
		Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		Double:    key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "double concurrency")),
		Halve:     key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "halve concurrency")),
		Mark:      key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "drop a marker")),
		Up:        up,
		Down:      down,
		Top:       k.Top,
		Bottom:    k.Bottom,
		PageUp:    k.PageUp,
		PageDown:  k.PageDown,
		Save:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "save marker")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// ShortHelp lists the pane's keys for the footer.
func (m *Model) ShortHelp() []key.Binding {
	if m.typing {
		return []key.Binding{m.keys.Save, m.keys.Cancel}
	}
	return []key.Binding{m.keys.StartStop, m.keys.Pause, m.keys.Double, m.keys.Halve, m.keys.Mark}
}

// FullHelp lists every key of the pane in columns.
func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{m.keys.StartStop, m.keys.Pause, m.keys.Double, m.keys.Halve},
		{m.keys.Mark, m.keys.Save, m.keys.Cancel},
		{m.keys.Up, m.keys.Down, m.keys.PageUp, m.keys.PageDown, m.keys.Top, m.keys.Bottom},
	}
}

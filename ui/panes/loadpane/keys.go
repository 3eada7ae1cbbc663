package loadpane

import (
	"charm.land/bubbles/v2/key"

	"github.com/profdeck/profdeck/ui/common"
)

// keyMap is the Server/Load pane's own bindings; scrolling uses the shared ones.
type keyMap struct {
	Start, Stop, Restart, Log key.Binding
	Diagnose, Expand          key.Binding
	Up, Down, Top, Bottom     key.Binding
	PageUp, PageDown, Back    key.Binding
	Yes, No                   key.Binding
}

func newKeyMap(k *common.KeyMap) keyMap {
	up, down := k.Up, k.Down
	up.SetHelp("k/↑", "scroll log")
	down.SetHelp("j/↓", "scroll log")
	// g is listed once: it switches the GPU rows, and in the full log it
	// goes to the top (home does too).
	top := k.Top
	top.SetHelp("home", "log top")

	return keyMap{
		Start:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start server")),
		Stop:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop server")),
		Restart:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart with profiler")),
		Log:      key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "full log")),
		Diagnose: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "why stalled? (diagnose)")),
		Expand:   key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "nodes/all GPUs")),
		Up:       up,
		Down:     down,
		Top:      top,
		Bottom:   k.Bottom,
		PageUp:   k.PageUp,
		PageDown: k.PageDown,
		Back:     key.NewBinding(key.WithKeys(k.Back.Keys()...), key.WithHelp("esc", "close full log")),
		Yes:      key.NewBinding(key.WithKeys("y", "enter"), key.WithHelp("y", "yes")),
		No:       key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no")),
	}
}

// ShortHelp lists the pane's keys for the footer.
func (m *Model) ShortHelp() []key.Binding {
	if m.confirm != nil {
		return []key.Binding{m.keys.Yes, m.keys.No}
	}
	if m.fullLog {
		return []key.Binding{m.keys.Back, m.keys.Up, m.keys.Down, m.keys.PageDown}
	}
	return []key.Binding{m.keys.Start, m.keys.Stop, m.keys.Restart, m.keys.Log}
}

// FullHelp lists every key of the pane in columns.
func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{m.keys.Start, m.keys.Stop, m.keys.Restart, m.keys.Diagnose, m.keys.Expand},
		{m.keys.Log, m.keys.Back, m.keys.Up, m.keys.Down, m.keys.Top, m.keys.Bottom},
		{m.keys.PageUp, m.keys.PageDown, m.keys.Yes, m.keys.No},
	}
}

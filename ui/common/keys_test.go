package common

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestScrollSteps(t *testing.T) {
	k := DefaultKeyMap()
	for _, c := range []struct {
		msg  tea.KeyPressMsg
		step int
		ok   bool
	}{
		{tea.KeyPressMsg{Code: 'j', Text: "j"}, 1, true},
		{tea.KeyPressMsg{Code: tea.KeyDown}, 1, true},
		{tea.KeyPressMsg{Code: 'k', Text: "k"}, -1, true},
		{tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}, 7, true},
		{tea.KeyPressMsg{Code: tea.KeyPgUp}, -7, true},
		{tea.KeyPressMsg{Code: 'G', Text: "G"}, ScrollEnd, true},
		{tea.KeyPressMsg{Code: 'g', Text: "g"}, -ScrollEnd, true},
		{tea.KeyPressMsg{Code: 's', Text: "s"}, 0, false},
	} {
		step, ok := k.Scroll(c.msg, 7)
		if step != c.step || ok != c.ok {
			t.Errorf("%q: step %d ok %v, want %d %v", c.msg.String(), step, ok, c.step, c.ok)
		}
	}
	if step, _ := k.Scroll(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}, 0); step != 1 {
		t.Errorf("a page of 0 rows steps %d, want 1", step)
	}
}

package macropane

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/ui/common"
)

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourParams reports whether an SGR parameter list sets a colour.
func colourParams(params string) bool {
	for _, p := range strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' }) {
		n, _ := strconv.Atoi(p)
		if (n >= 30 && n <= 38) || (n >= 40 && n <= 48) || (n >= 90 && n <= 97) || (n >= 100 && n <= 107) {
			return true
		}
	}
	return false
}

// With NO_COLOR the program writes (TTY_FORCE makes the captured output count as a terminal) the pane without a colour sequence
// (bold and reverse may stay), and with colours it does use them.
func TestNoColor(t *testing.T) {
	for _, tc := range []struct {
		env        []string
		wantColour bool
	}{
		{[]string{"TERM=xterm-256color", "TTY_FORCE=1", "NO_COLOR=1"}, false},
		{[]string{"TERM=xterm-256color", "TTY_FORCE=1"}, true},
	} {
		m := newPane(t, 100, 30, true)
		out := &countingWriter{}
		p := tea.NewProgram(host{m}, tea.WithInput(nil), tea.WithOutput(out), tea.WithWindowSize(100, 30),
			tea.WithoutSignals(), tea.WithEnvironment(tc.env))
		done := make(chan error, 1)
		go func() { _, err := p.Run(); done <- err }()
		p.Send(common.EventsMsg{At: clock0, Events: loadEvents(t)})
		time.Sleep(500 * time.Millisecond)
		p.Quit()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("program did not quit")
		}
		out.mu.Lock()
		text := string(out.start)
		out.mu.Unlock()
		if !strings.Contains(ansi.Strip(text), "plateau at C=128") {
			t.Fatalf("%v: the pane was not drawn", tc.env)
		}
		coloured := false
		for _, mm := range sgr.FindAllStringSubmatch(text, -1) {
			if colourParams(mm[1]) {
				coloured = true
				break
			}
		}
		if coloured != tc.wantColour {
			t.Errorf("%v: colour sequences present = %v, want %v", tc.env, coloured, tc.wantColour)
		}
	}
}

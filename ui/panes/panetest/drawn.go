package panetest

import (
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/ui/common"
)

// Change is one thing that changes what a pane shows: Do makes it, and
// the view drawn after it holds Shows ("" when the view differing is
// enough).
type Change struct {
	Name  string
	Do    func()
	Shows string
}

// otherMsg is a message that is no pane's own (another pane's command).
type otherMsg struct{}

// DrawnOnce checks a pane that keeps its drawn view (draws counts the
// drawings): Views again, the clock, an empty batch of events, another
// pane's message and each of idle (keys that move nothing) draw nothing
// and return the same string; each of changes draws the view once, and
// the new view differs and shows what changed.
func DrawnOnce(t testing.TB, c common.Component, draws func() int, idle []string, changes []Change) {
	t.Helper()
	first := c.View()
	n := draws()
	quiet := []func(){
		func() {},
		func() { c.Update(common.TickMsg{At: time.Now()}) },
		func() { c.Update(common.EventsMsg{At: time.Now()}) },
		func() { c.Update(otherMsg{}) },
	}
	for _, k := range idle {
		quiet = append(quiet, func() { c.Update(Key(k)) })
	}
	for _, do := range quiet {
		do()
		if v := c.View(); v != first {
			t.Fatalf("the view changed with nothing new:\n%s\nwas:\n%s", ansi.Strip(v), ansi.Strip(first))
		}
	}
	if d := draws() - n; d != 0 {
		t.Fatalf("drawn %d times with nothing new (views, a tick, an empty batch, another pane's message, keys %q)", d, idle)
	}
	for _, ch := range changes {
		before, was := draws(), c.View()
		ch.Do()
		v := c.View()
		c.View()
		if d := draws() - before; d != 1 {
			t.Errorf("%s: drawn %d times, want once", ch.Name, d)
		}
		if v == was {
			t.Errorf("%s: the view did not change:\n%s", ch.Name, ansi.Strip(v))
		}
		if ch.Shows != "" {
			Shows(t, v, ch.Shows)
		}
	}
}

// BenchView times a frame of c as drawn when nothing changed (the drawing
// kept) and when something did (redraw marks it to be drawn again, as
// every frame was before panes kept their drawing).
func BenchView(b *testing.B, c common.Component, redraw func()) {
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			c.View()
		}
	})
	b.Run("changed", func(b *testing.B) {
		for b.Loop() {
			redraw()
			c.View()
		}
	})
}

// KeptUntilChange checks that View returns the drawing kept: state that
// behind sets behind Update's back does not show until change (a message
// that draws the view again), after which the view shows want.
func KeptUntilChange(t testing.TB, c common.Component, behind, change func(), want string) {
	t.Helper()
	kept := c.View()
	behind()
	if c.View() != kept {
		t.Fatal("View drew the pane again with no change")
	}
	change()
	Shows(t, c.View(), want)
}

package profilepane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// captured is a pane (no host) that shows an H200 capture of the engine's
// testdata as two levels' windows, at w×h; its kernel table is made longer
// (renamed copies of its kernels) so that j scrolls it.
func captured(t testing.TB, w, h int) *Model {
	t.Helper()
	c := campaign.Defaults()
	c.Server.URL = "http://127.0.0.1:8000"
	m := New(&common.Deps{Campaign: c, Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
	m.SetSize(w, h)
	sum, err := profile.ParseFile("../../../phases/profile/testdata/key_averages_top15.txt", 15)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		k := sum.Top[i%len(sum.Top)]
		k.Name = fmt.Sprintf("copy_%02d_%s", i, k.Name)
		sum.Top = append(sum.Top, k)
	}
	one, many := *sum, *sum
	one.Level, many.Level = 1, 64
	many.CommunicationShare /= 2
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{
		phases.New(at, phases.KindProfileSummary, one), phases.New(at, phases.KindProfileSummary, many)}})
	m.r.State = common.RunFinished
	m.dirty = true // as the capture's end does through Update
	return m
}

// The view is drawn once per change, not on every frame: Views again, the
// clock and keys that move nothing (k and g at the top; s and c, which
// only say why nothing starts or stops) return the drawing kept; a batch of
// events, l, j and a resize draw it once.
func TestDrawnOncePerChange(t *testing.T) {
	m := captured(t, 80, 20)
	failed := phases.New(at, phases.KindProfileFailed, phases.ProfileFailed{Step: "stop_profile", Error: "trace not flushed"})
	panetest.DrawnOnce(t, m, func() int { return m.draws }, []string{"k", "g", "s", "c"}, []panetest.Change{
		{Name: "l", Do: func() { m.Update(panetest.Key("l")) }, Shows: "▶C=1 "},
		{Name: "j", Do: func() { m.Update(panetest.Key("j")) }},
		{Name: "a batch of events", Do: func() { m.Update(common.EventsMsg{At: at, Events: []phases.Event{failed}}) }, Shows: "trace not flushed"},
		{Name: "a resize", Do: func() { m.SetSize(120, 36) }, Shows: "sdpa_sm80_flash_fprop_wm"},
	})
	// View returns the drawing kept: a message set behind Update's back
	// shows only once a change draws the view again.
	panetest.KeptUntilChange(t, m, func() { m.msg = "late message" }, func() { m.SetSize(100, 30) }, "late message")
}

// While a step of a capture runs, its spinner and elapsed time move with
// the clock: each tick draws the view once, and a View between ticks draws
// nothing. Once the step is done, a tick draws nothing; the capture's end
// (a message of the run) draws the view once.
func TestDrawnOncePerTickWhileCapturing(t *testing.T) {
	m := captured(t, 80, 20)
	end := m.r.Start(m.d, func(ctx context.Context, em *phases.Emitter) error { return nil })
	step := func(done bool) phases.Event {
		return phases.New(at, phases.KindProfileStep, phases.ProfileStep{Step: "load", Detail: "3 requests", ElapsedS: 1, Done: done})
	}
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{step(false)}})
	for range 3 {
		before, was := m.draws, m.View()
		m.Update(common.TickMsg{At: at})
		v := m.View()
		m.View()
		if d := m.draws - before; d != 1 || v == was {
			t.Fatalf("a tick while a step runs: drawn %d times, changed %v:\n%s", d, v != was, ansi.Strip(v))
		}
	}
	panetest.Shows(t, m.View(), "load")
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{step(true)}})
	kept, before := m.View(), m.draws
	m.Update(common.TickMsg{At: at})
	if m.View() != kept || m.draws != before {
		t.Fatalf("a tick with no step running drew the view again:\n%s", ansi.Strip(m.View()))
	}
	m.Update(end())
	m.View()
	if d := m.draws - before; d != 1 {
		t.Errorf("the capture's end: drawn %d times, want once", d)
	}
}

// BenchmarkView is a frame of the pane at 120×36 with a capture's summary:
// as drawn when nothing changed (the drawing kept), and when something did
// (drawn again, as every frame was before).
func BenchmarkView(b *testing.B) {
	m := captured(b, 120, 36)
	panetest.BenchView(b, m, func() { m.dirty = true })
}

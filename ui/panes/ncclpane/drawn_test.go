package ncclpane

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// The view is drawn once per change, not on every frame: Views again, the
// clock and keys that move nothing (k and g at the top) return the drawing
// kept; a batch of events, j, G and a resize draw it once. Nothing on the
// pane runs on the clock, so a tick never needs a drawing.
func TestDrawnOncePerChange(t *testing.T) {
	m := New(&common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
	m.SetSize(80, 20)
	m.Update(common.EventsMsg{At: at, Events: measured(t)})
	m.r.State, m.r.Label = common.RunFinished, "kimi-k2.5 TP8 · 2 ranks"
	m.changed()
	link := phases.New(at, phases.KindNCCLLink, phases.NCCLLink{Kind: "NVLink", Detail: "18 links", PeakGB: 478})
	panetest.DrawnOnce(t, m, func() int { return m.draws }, []string{"k", "g"}, []panetest.Change{
		{Name: "a batch of events", Do: func() { m.Update(common.EventsMsg{At: at, Events: []phases.Event{link}}) }, Shows: "link: NVLink 478"},
		{Name: "j", Do: func() { m.Update(panetest.Key("j")) }},
		{Name: "G", Do: func() { m.Update(panetest.Key("G")) }, Shows: "no latency cliff"},
		{Name: "a resize", Do: func() { m.SetSize(120, 36) }, Shows: "All-reduce burst"},
	})
	// View returns the drawing kept: a result folded in behind Update's
	// back shows only once a change draws the view again.
	late := phases.ScriptError{What: "all_to_all", Err: "late failure"}
	panetest.KeptUntilChange(t, m, func() { m.res.Add(phases.New(at, phases.KindNCCLError, late)) }, func() {
		m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindNCCLProgress, phases.Progress{Done: 1, Total: 2})}})
	}, "late failure")
}

// BenchmarkView is a frame of the pane at 120×36 with a whole run's
// results: as drawn when nothing changed (the drawing kept), and when
// something did (drawn again, as every frame was before).
func BenchmarkView(b *testing.B) {
	m := New(&common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
	m.SetSize(120, 36)
	m.Update(common.EventsMsg{At: at, Events: measured(b)})
	panetest.BenchView(b, m, func() { m.dirty = true })
}

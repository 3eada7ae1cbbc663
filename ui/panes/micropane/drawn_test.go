package micropane

import (
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// The view is drawn once per change, not on every frame: Views again, the
// clock and keys that move nothing (h at the smallest M, k at the top)
// return the drawing kept; a batch of events, o, l, j and a resize draw
// it once. Nothing on the pane runs on the clock, so a tick never needs a
// drawing.
func TestDrawnOncePerChange(t *testing.T) {
	m := bare()
	m.SetSize(80, 20)
	m.Update(common.EventsMsg{At: at, Events: measured(t)})
	m.r.State, m.r.Label = common.RunFinished, "kimi-k2.5 TP8"
	m.changed()
	failed := phases.New(at, phases.KindMicroError, phases.ScriptError{Name: "o_proj", Step: 8, Err: "CUDA out of memory"})
	panetest.DrawnOnce(t, m, func() int { return m.draws }, []string{"h", "k", "g"}, []panetest.Change{
		{Name: "a batch of events", Do: func() { m.Update(common.EventsMsg{At: at, Events: []phases.Event{failed}}) }, Shows: "CUDA out of memory"},
		{Name: "o", Do: func() { m.Update(panetest.Key("o")) }, Shows: "sorted by call time"},
		{Name: "l", Do: func() { m.Update(panetest.Key("l")) }},
		{Name: "j", Do: func() { m.Update(panetest.Key("j")) }, Shows: "GEMM 2–"},
		{Name: "a resize", Do: func() { m.SetSize(120, 36) }, Shows: "GB/s"},
	})
	// View returns the drawing kept: a result folded in behind Update's
	// back shows only once a change draws the view again.
	late := phases.ScriptError{Name: "w_uk", Err: "late failure"}
	panetest.KeptUntilChange(t, m, func() { m.res.Add(phases.New(at, phases.KindMicroError, late)) }, func() {
		m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindMicroProgress, phases.Progress{Done: 1, Total: 2})}})
	}, "late failure")
}

// BenchmarkView is a frame of the pane at 120×36 with a whole run's
// results: as drawn when nothing changed (the drawing kept), and when
// something did (drawn again, as every frame was before).
func BenchmarkView(b *testing.B) {
	m := bare()
	m.SetSize(120, 36)
	m.Update(common.EventsMsg{At: at, Events: measured(b)})
	panetest.BenchView(b, m, func() { m.dirty = true })
}

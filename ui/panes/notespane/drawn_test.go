package notespane

import (
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// filled is a pane at w×h with the budget's inputs and 40 notes, following
// the newest, its notebook not written yet.
func filled(t testing.TB, w, h int) *Model {
	d, _ := deps(t)
	d.Campaign = campaign.Defaults()
	d.Campaign.Notebook = "kimi-k25.md"
	m := New(d)
	m.SetSize(w, h)
	evs := []phases.Event{
		ev(1, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 12.40, Completed: 12}),
		ev(2, phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, TotalMs: 6.386}),
		ev(3, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3500}),
	}
	for i := range 40 {
		evs = append(evs, ev(10+i, phases.KindNotesNote, phases.Note{Text: fmt.Sprintf("note number %02d", i), Pane: "Macro"}))
	}
	m.Update(common.EventsMsg{At: t0, Events: evs})
	return m
}

// The view is drawn once per change, not on every frame: Views again, the
// clock (while no written notebook's age is shown), another pane's message
// and keys that move nothing (j and G at the bottom) return the drawing
// kept; a batch with a note, k, g, the notebook's write, a tick that moves
// its age by a second and a resize draw it once.
func TestDrawnOncePerChange(t *testing.T) {
	m := filled(t, 80, 20)
	note := phases.New(t0.Add(time.Minute), phases.KindNotesNote, phases.Note{Text: "spec decode helps", Pane: "Notes"})
	panetest.DrawnOnce(t, m, func() int { return m.draws }, []string{"j", "G"}, []panetest.Change{
		{Name: "a batch with a note", Do: func() { m.Update(common.EventsMsg{At: m.now, Events: []phases.Event{note}}) }, Shows: "spec decode helps"},
		{Name: "k", Do: func() { m.Update(panetest.Key("k")) }, Shows: "%"},
		{Name: "g", Do: func() { m.Update(panetest.Key("g")) }, Shows: "note number 00"},
		{Name: "the notebook written", Do: func() {
			saved := phases.New(m.now.Add(-5*time.Second), phases.KindNotesSaved, phases.NotebookSaved{Path: "kimi-k25.md"})
			m.Update(common.EventsMsg{At: m.now, Events: []phases.Event{saved}})
		}, Shows: "(5s ago)"},
		{Name: "a tick a second later", Do: func() { m.Update(common.TickMsg{At: m.now.Add(time.Second)}) }, Shows: "(6s ago)"},
		{Name: "a resize", Do: func() { m.SetSize(120, 36) }},
	})
	// Ticks within the same second, and a batch of events the pane does
	// not show, draw nothing.
	kept, before := m.View(), m.draws
	m.Update(common.TickMsg{At: m.now.Add(200 * time.Millisecond)})
	m.Update(common.EventsMsg{At: m.now, Events: []phases.Event{phases.New(m.now, phases.KindLoadMilestone, phases.Milestone{Stage: phases.StageReady})}})
	if v := m.View(); v != kept || m.draws != before {
		t.Fatalf("drawn %d times within the second:\n%s", m.draws-before, ansi.Strip(v))
	}
	// View returns the drawing kept: a journal failure set behind
	// Update's back shows only once a change draws the view again.
	panetest.KeptUntilChange(t, m, func() { m.journalErr = "disk full" }, func() { m.SetSize(80, 20) }, "journal not written: disk full")
}

// BenchmarkView is a frame of the pane at 120×36 with the budget and 40
// notes: as drawn when nothing changed (the drawing kept), and when
// something did (drawn again, as every frame was before).
func BenchmarkView(b *testing.B) {
	m := filled(b, 120, 36)
	panetest.BenchView(b, m, func() { m.dirty = true })
}

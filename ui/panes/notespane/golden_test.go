package notespane

import (
	"testing"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// The pane's main states, each filling both boxes: nothing measured yet,
// and the decode-time budget with notes, a marker and a written notebook.
func TestGoldenStates(t *testing.T) {
	d, _ := deps(t)
	d.Campaign = campaign.Defaults()
	d.Campaign.Notebook = "kimi-k25.md"
	m := New(d)
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "empty-80x20", sized(m, 80, 20))

	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 12.40, Completed: 12}),
		ev(2, phases.KindNotesNote, phases.Note{Text: "single stream looks slow", Pane: "Macro"}),
		ev(3, phases.KindNotesMarker, phases.Marker{Label: "spec decode on", Pane: "macro"}),
		ev(4, phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, TotalMs: 6.386}),
		ev(5, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3500}),
		ev(7, phases.KindMacroPlateau, phases.Plateau{Concurrency: 128, OutputThroughput: 1536}),
		ev(9, phases.KindNotesSaved, phases.NotebookSaved{Path: "kimi-k25.md"}),
	}})
	m.Update(common.TickMsg{At: t0.Add(21e9)})
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "budget-80x20", sized(m, 80, 20))
	panetest.Golden(t, "budget-120x36", sized(m, 120, 36))
}

func sized(m *Model, w, h int) string {
	m.SetSize(w, h)
	return m.View()
}

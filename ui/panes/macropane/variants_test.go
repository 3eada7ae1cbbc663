package macropane

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// The board follows the run from its events alone: the plan lists the
// variants to come, a start names the one serving, a prediction fills its
// row, a finish records its state and the next ones stay to come.
func TestBoardFromEvents(t *testing.T) {
	var b Board
	ev := func(kind string, d any) { b.Add(phases.Event{Kind: kind, Data: d}) }
	ev(phases.KindVariantPlanned, phases.VariantPlanned{Variants: []phases.VariantSpec{{Name: "cap64"}, {Name: "chunked"}, {Name: "spec"}}})
	if h := b.Header(); h != "serving — · to come: cap64, chunked, spec" {
		t.Errorf("planned: %q", h)
	}
	ev(phases.KindVariantPredicted, &phases.VariantPrediction{Variant: "cap64",
		PlateauTokS: phases.Predicted{Value: 1879, OK: true}, PlateauC: phases.Predicted{Value: 64, OK: true},
		TPOTC1Ms: phases.Predicted{Value: 12.5, OK: true}})
	ev(phases.KindVariantStarted, phases.VariantStarted{Spec: phases.VariantSpec{Name: "cap64"}})
	if h := b.Header(); h != "serving cap64 · to come: chunked, spec" {
		t.Errorf("started: %q", h)
	}
	ev(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 16, MeanTPOTms: 13, MedianTPOTms: 12})
	ev(phases.KindMacroLevel, phases.LevelResult{Concurrency: 64, Completed: 64, MeanTPOTms: 36, MedianTPOTms: 35, OutputThroughput: 1785})
	ev(phases.KindMacroPlateau, phases.Plateau{Concurrency: 64, OutputThroughput: 1785})
	ev(phases.KindVariantFinished, phases.VariantFinished{Name: "cap64", State: phases.StepDone})
	ev(phases.KindMacroPlateau, phases.Plateau{Concurrency: 8, OutputThroughput: 1}) // between variants: no one's
	v := b.View(80)
	var row string
	for _, l := range strings.Split(v, "\n") {
		if strings.HasPrefix(l, "cap64") {
			row = l
		}
	}
	// (1785 − 1879) / 1879 = −5%; (13 − 12.5) / 12.5 = +4%: the mean TPOT,
	// as predicted and as the notebook measures it; TPOT at the plateau
	// measured, not predicted.
	for _, want := range []string{phases.StepDone, "1785 (1879, -5%)", "13 (12.5, +4%)", " 36 "} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q\n%s", row, want, v)
		}
	}
	if !strings.HasPrefix(v, "serving — · to come: chunked, spec") {
		t.Errorf("finished:\n%s", v)
	}
	// A name longer than the header's keeps the columns aligned.
	ev(phases.KindVariantStarted, phases.VariantStarted{Spec: phases.VariantSpec{Name: "max-num-seqs-256"}})
	lines := strings.Split(b.View(200), "\n")
	if col := strings.Index(lines[1], "state"); strings.Index(lines[len(lines)-1], "serving") != col {
		t.Errorf("columns not aligned:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range strings.Split(b.View(30), "\n") {
		if len([]rune(l)) > 30 {
			t.Errorf("line wider than 30: %q", l)
		}
	}
}

// The Macro pane shows the variant serving and those to come from a
// journal's variant events; a pane 32 rows high or more shows the table
// under it, a shorter one the line alone.
func TestMacroPaneVariants(t *testing.T) {
	evs := []phases.Event{
		{Time: clock0, Phase: phases.Session, Kind: phases.KindVariantPlanned, Data: phases.VariantPlanned{
			Variants: []phases.VariantSpec{{Name: "cap64"}, {Name: "spec"}}}},
		{Time: clock0, Phase: phases.Session, Kind: phases.KindVariantPredicted, Data: phases.VariantPrediction{
			Variant: "cap64", PlateauTokS: phases.Predicted{Value: 1350, OK: true}}},
		{Time: clock0, Phase: phases.Session, Kind: phases.KindVariantStarted, Data: phases.VariantStarted{
			Spec: phases.VariantSpec{Name: "cap64"}}},
	}
	for _, tc := range []struct {
		w, h  int
		table bool
	}{{80, 20, false}, {120, 36, true}} {
		m := newPane(t, tc.w, tc.h, true)
		m.Update(common.EventsMsg{At: clock0, Events: evs, Replayed: true})
		v := ansi.Strip(m.View())
		if !strings.Contains(v, "variants: serving cap64 · to come: spec") {
			t.Errorf("%dx%d: no variants line\n%s", tc.w, tc.h, v)
		}
		if got := strings.Contains(v, "— (1350)"); got != tc.table {
			t.Errorf("%dx%d: table shown %v, want %v\n%s", tc.w, tc.h, got, tc.table, v)
		}
	}
}

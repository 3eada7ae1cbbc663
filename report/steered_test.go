package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// TestSteeredLevelsAreNotTheBudgets: a level steered by hand never
// replaces a level that ran as planned, nor does its sweep's plateau
// replace a clean one; alone, its TPOT is refused with the reason.
func TestSteeredLevelsAreNotTheBudgets(t *testing.T) {
	steered := []string{"concurrency 1 → 2 at 1.0 s"}
	b := Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 20, MedianTPOTms: 10},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, Completed: 20, MedianTPOTms: 20},
		phases.KindMacroPlateau, phases.Plateau{Concurrency: 8, OutputThroughput: 400},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 20, MedianTPOTms: 15, Steered: steered},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 4, Completed: 20, MedianTPOTms: 18},
		phases.KindMacroPlateau, phases.Plateau{Concurrency: 4, OutputThroughput: 300, Steered: []int{1}},
	))
	if !b.Single.HasTPOT || b.Single.TPOTms != 10 {
		t.Fatalf("single stream took the steered level: %+v", b.Single)
	}
	if b.Plateau == nil || b.Plateau.Concurrency != 8 {
		t.Fatalf("plateau %+v, want the clean sweep's C=8", b.Plateau)
	}

	b = Budget(budgetEvents(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 20, MedianTPOTms: 15, Steered: steered}))
	if b.Single.HasTPOT || len(b.Single.Missing) == 0 || !strings.Contains(b.Single.Missing[0], "steered by hand (concurrency 1 → 2 at 1.0 s)") {
		t.Fatalf("a steered level alone: %+v", b.Single)
	}
}

// TestSteeredLevelsMarked: the notebook's level table and compare mark a
// steered level and say what was done.
func TestSteeredLevelsMarked(t *testing.T) {
	steered := []string{"concurrency 2 → 4 at 2.5 s"}
	evs := budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 20, MedianTPOTms: 10},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 4, Completed: 20, MedianTPOTms: 12, Steered: steered},
		phases.KindMacroPlateau, phases.Plateau{Concurrency: 4, OutputThroughput: 300, Steered: []int{4}},
	)
	nb, err := RenderNotebook(evs, NotebookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"steered by hand: concurrency 2 → 4 at 2.5 s |", "The plateau was found among levels steered by hand (C=4)"} {
		if !strings.Contains(string(nb), want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
	a := Sweep{Path: "a", Levels: []phases.LevelResult{{Concurrency: 4, Completed: 20, OutputThroughput: 100}}}
	bs := Sweep{Path: "b", Levels: []phases.LevelResult{{Concurrency: 4, Completed: 20, OutputThroughput: 154, Steered: steered}}}
	if c := Compare(a, bs); c.Levels[0].Steered != "B" {
		t.Fatalf("compare: %+v", c.Levels[0])
	}
	var w bytes.Buffer
	WriteComparison(&w, a, bs)
	if !strings.Contains(w.String(), "C=4 (steered in B)") || !strings.Contains(w.String(), "steered: 1 level(s)") {
		t.Fatalf("comparison:\n%s", w.String())
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// A part measured while the sweep ran another workload is marked in the
// budget, its headline and the notebook: no budget combines parts from
// different workloads silently.
func TestBudgetMarksPartsOfAnotherWorkload(t *testing.T) {
	sweep := func(in int) phases.PhaseStarted {
		return phases.PhaseStarted{Name: phases.Macro, Params: map[string]any{"input_len": float64(in), "output_len": 64.0}}
	}
	level := phases.LevelResult{Concurrency: 1, Completed: 16, MedianTPOTms: 12, MeanTPOTms: 12}
	together := []any{
		phases.KindSessionPhaseStarted, sweep(256),
		phases.KindMacroLevel, level,
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, GraphMs: 5},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Micro},
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 4000},
	}
	if b := Budget(budgetEvents(together...)).Single; len(b.Warnings) != 0 || strings.Contains(b.Headline, "*") {
		t.Fatalf("measured together: warnings %v, headline %q", b.Warnings, b.Headline)
	}
	evs := budgetEvents(append(together, phases.KindSessionPhaseStarted, sweep(1024), phases.KindMacroLevel, level)...)
	b := Budget(evs).Single
	if len(b.Split) == 0 || b.Split[0].Stale != "measured at input 256; the sweep at input 1024" {
		t.Fatalf("parts %+v", b.Split)
	}
	if !strings.Contains(b.Headline, "communication* 5.00 ms") || !strings.Contains(b.Headline, "(* measured at input 256; the sweep at input 1024)") {
		t.Errorf("headline %q", b.Headline)
	}
	if len(b.Warnings) != 1 || !strings.Contains(b.Warnings[0], "not measured together: GEMM, communication measured at input 256") {
		t.Errorf("warnings %q", b.Warnings)
	}
	md, _ := RenderNotebook(evs, goldenOpts())
	if !strings.Contains(string(md), "| decode step · communication (estimate) (**measured at input 256; the sweep at input 1024**) | 5.00 |") {
		t.Errorf("the notebook does not mark the part:\n%s", md)
	}
}

// Above 10% of TPOT not accounted for, the budget names what would close
// it: a mean TPOT carried by a few long gaps asks for the level again.
func TestBudgetClosesWhatIsNotAccounted(t *testing.T) {
	w := &TPOTSplit{Concurrency: 1, TPOTms: 28.11, MedianTPOTms: 12.99}
	if c := w.closing(); !strings.Contains(c, "the mean TPOT 28.11 ms stands 116% above its median 12.99 ms") || !strings.Contains(c, "level C=1 again") {
		t.Errorf("close %q", c)
	}
	w = &TPOTSplit{Concurrency: 8, TPOTms: 20, MedianTPOTms: 19, Unmeasured: []string{"prefill (no steady profile window at C=8)"}}
	if c := w.closing(); c != "measure prefill (no steady profile window at C=8)" {
		t.Errorf("close %q", c)
	}
}

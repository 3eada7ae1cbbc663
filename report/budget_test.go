package report

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func budgetEvents(kv ...any) []phases.Event {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []phases.Event
	for i := 0; i < len(kv); i += 2 {
		evs = append(evs, phases.New(t0.Add(time.Duration(i)*time.Second), kv[i].(string), kv[i+1]))
	}
	return evs
}

func TestBudgetSeedCampaign(t *testing.T) {
	b := Budget(seedEvents())
	s := b.Single
	if !s.Complete() || len(s.Missing) != 0 || len(s.Warnings) != 0 {
		t.Fatalf("single stream: %+v", s)
	}
	// 6.386 / 12.40 = 51.5%, 3.5 / 12.40 = 28.2%, rest 2.514 ms = 20.3%.
	rest, _ := s.RestMs()
	if !near(s.TPOTms, 12.40) || !near(s.AllReduceMs, 6.386) || !near(s.GEMMms, 3.5) || !near(rest, 12.40-6.386-3.5) {
		t.Fatalf("split %+v rest %v", s, rest)
	}
	// The budget is the whole split of the mean TPOT: without a profile
	// window the isolated figures stand in for communication and GEMM.
	if got := s.Summary(); got != "TPOT 12.52 ms mean (median 12.40) = communication 6.39 ms (51.0%) + GEMM 3.50 ms (27.9%) + not accounted for 2.64 ms (21.1%)" || s.Headline != got {
		t.Fatalf("summary %q, headline %q", got, s.Headline)
	}
	if s.Split[0].Step != phases.NCCL || !s.Split[0].Estimate || s.Split[1].Step != phases.Micro || s.Split[1].Level != 1 {
		t.Errorf("parts' sources: %+v", s.Split)
	}
	iso := s
	iso.Split = nil
	if got := iso.Summary(); got != "TPOT 12.40 ms (median) = all-reduce 6.39 ms (51.5%) + GEMM 3.50 ms (28.2%) + rest 2.51 ms (20.3%)" {
		t.Fatalf("isolated summary %q", got)
	}
	if b.Plateau == nil || b.Plateau.Concurrency != 128 || !b.Plateau.Complete() {
		t.Fatalf("plateau %+v", b.Plateau)
	}
	if got := b.Plateau.Summary(); got != "TPOT 81.71 ms mean (median 80.90) = GEMM 41.20 ms (50.4%) + communication 15.99 ms (19.6%) + not accounted for 24.52 ms (30.0%)" {
		t.Fatalf("plateau summary %q", got)
	}
	// 30% not accounted for: the budget names what would close it.
	if !strings.Contains(b.Plateau.Close, "the engine's step mix") || s.Close != "" && !strings.Contains(s.Close, "step mix") {
		t.Errorf("close: plateau %q, single %q", b.Plateau.Close, s.Close)
	}
}

func TestBudgetMissingInputs(t *testing.T) {
	b := Budget(nil)
	if b.Single.Any() || len(b.Single.Missing) != 3 || b.Plateau != nil {
		t.Fatalf("empty: %+v", b)
	}
	if b.Single.Summary() != "no inputs measured yet" {
		t.Fatalf("empty summary %q", b.Single.Summary())
	}

	// TPOT only: everything is "unsplit".
	b = Budget(budgetEvents(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10}))
	s := b.Single
	if !s.HasTPOT || s.HasAR || s.HasGEMM || len(s.Missing) != 2 {
		t.Fatalf("tpot only: %+v", s)
	}
	if !strings.Contains(s.Missing[0], "all-reduce burst at M=1") || !strings.Contains(s.Missing[1], "GEMM step sum at M=1") {
		t.Fatalf("missing named wrongly: %v", s.Missing)
	}
	ps := s.Parts()
	if len(ps) != 1 || !near(ps[0].Ms, 10) || !near(ps[0].Pct, 100) || !strings.Contains(ps[0].Name, "not measured") {
		t.Fatalf("parts %+v", ps)
	}

	// TPOT and all-reduce, GEMM missing: the rest includes the GEMMs.
	b = Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, TotalMs: 4}))
	s = b.Single
	rest, _ := s.RestMs()
	if !near(rest, 6) || !near(s.Pct(s.AllReduceMs), 40) || s.Parts()[1].Name != "rest (incl. GEMMs, not measured)" {
		t.Fatalf("tpot+ar: %+v rest %v parts %+v", s, rest, s.Parts())
	}

	// No TPOT: the parts are shown, no percentages.
	b = Budget(budgetEvents(
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, TotalMs: 4},
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 2500}))
	s = b.Single
	if s.HasTPOT || s.Parts() != nil || s.Pct(4) != 0 || len(s.Missing) != 1 {
		t.Fatalf("no tpot: %+v", s)
	}
	if got := s.Summary(); got != "all-reduce 4.00 ms, GEMM 2.50 ms per step; TPOT not measured, so no split" {
		t.Fatalf("no-tpot summary %q", got)
	}

	// A plateau whose M was not benchmarked names what is missing there.
	b = Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 64, MedianTPOTms: 40},
		phases.KindMacroPlateau, phases.Plateau{Concurrency: 64, OutputThroughput: 1000},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, TotalMs: 4}))
	if b.Plateau == nil || !b.Plateau.HasTPOT || b.Plateau.HasAR || len(b.Plateau.Missing) != 2 ||
		!strings.Contains(b.Plateau.Missing[0], "M=64") {
		t.Fatalf("plateau %+v", b.Plateau)
	}
}

func TestBudgetRulesOfSelection(t *testing.T) {
	b := Budget(budgetEvents(
		// An open-loop level at C=1 is not single stream.
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Rate: 2, MedianTPOTms: 99},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 20},
		// A later measurement replaces an earlier one.
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, TotalMs: 9},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, TotalMs: 5},
		// Without a per-step total, the GEMMs' step times are summed.
		phases.KindMicroGEMM, phases.GEMMResult{Name: "a", M: 1, PerStep: 61, Us: 10, StepUs: 610},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "b", M: 1, PerStep: 2, Us: 100},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "c", M: 8, PerStep: 1, Us: 1000, StepUs: 1000},
	))
	s := b.Single
	if !near(s.TPOTms, 10) || !near(s.AllReduceMs, 5) || !near(s.GEMMms, 0.81) {
		t.Fatalf("%+v", s)
	}
	if !strings.Contains(strings.Join(s.Sources, ";"), "sum of 2 timed GEMMs") {
		t.Fatalf("sources %v", s.Sources)
	}
}

func TestBudgetPartsExceedingTPOTAreFlagged(t *testing.T) {
	b := Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, TotalMs: 7},
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 5000}))
	s := b.Single
	rest, _ := s.RestMs()
	if !near(rest, -2) || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "exceed TPOT by 2.00 ms") {
		t.Fatalf("%+v", s)
	}
	// The bar gives the negative rest no room and still fills its width.
	if w := BarWidths(s.Parts(), 24); w[0]+w[1] != 24 || w[2] != 0 || w[0] != 14 {
		t.Fatalf("widths %v", w)
	}
}

func TestBarWidthsAddUp(t *testing.T) {
	parts := []BudgetPart{{Ms: 6.386}, {Ms: 3.5}, {Ms: 2.514}}
	for width := 1; width < 120; width++ {
		w := BarWidths(parts, width)
		if w[0]+w[1]+w[2] != width {
			t.Fatalf("width %d: %v", width, w)
		}
	}
	if got := TextBar([]BudgetPart{{Ms: 1, Rune: 'a'}, {Ms: 3, Rune: 'b'}}, 8); got != "aabbbbbb" {
		t.Fatalf("bar %q", got)
	}
}

func TestBudgetWithHugeFigures(t *testing.T) {
	b := Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 1e308},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, TotalMs: 1e308},
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 1e308}))
	done := make(chan struct{})
	go func() {
		TextBar(b.Single.Parts(), 40)
		b.Single.Summary()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the bar of infinite parts never ends")
	}
}

func TestBudgetPrefersAllReducesInTheStep(t *testing.T) {
	ev := func(br phases.NCCLBurst) BudgetSplit {
		return Budget(budgetEvents(
			phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
			phases.KindNCCLBurst, br)).Single
	}
	s := ev(phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2, InStepMs: 2.5})
	if !near(s.AllReduceMs, 2.5) || !strings.Contains(strings.Join(s.Sources, ";"), "evicts L2") {
		t.Fatalf("in the step: %v %v", s.AllReduceMs, s.Sources)
	}
	if s = ev(phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2}); !near(s.AllReduceMs, 2) {
		t.Fatalf("graph: %v", s.AllReduceMs)
	}
	if s = ev(phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4}); !near(s.AllReduceMs, 4) {
		t.Fatalf("eager: %v", s.AllReduceMs)
	}
}

// A burst without its figure between GEMMs: the budget takes the graph
// time and says why, in the NCCL run's words (the warning of its M and
// those of every M), not another M's, and not an earlier run's.
func TestBudgetSaysWhyNotBetweenGEMMs(t *testing.T) {
	notSlower := "between GEMMs: the graph with all-reduces at M=1 was not slower than the GEMMs alone (2.114 ms vs 2.120 ms): no figure"
	s := Budget(budgetEvents(
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL},
		phases.KindNCCLWarning, phases.NCCLWarning{M: 1, Text: "an earlier run's"},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindNCCLWarning, phases.NCCLWarning{M: 1, Text: notSlower},
		phases.KindNCCLWarning, phases.NCCLWarning{M: 8, Text: "another M's"},
		phases.KindNCCLWarning, phases.NCCLWarning{Tokens: 16, Text: "an all-to-all's"},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2})).Single
	src := strings.Join(s.Sources, "\n")
	if !near(s.AllReduceMs, 2) || !strings.Contains(src, "all-reduce, as the NCCL run said: "+notSlower) ||
		strings.Contains(src, "another M's") || strings.Contains(src, "earlier run") || strings.Contains(src, "all-to-all's") {
		t.Fatalf("%v ms, sources:\n%s", s.AllReduceMs, src)
	}
	// With the figure there, nothing is said.
	s = Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindNCCLWarning, phases.NCCLWarning{Text: "CUDA graph: not captured (--no-graph)"},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2, InStepMs: 2.5})).Single
	if strings.Contains(strings.Join(s.Sources, "\n"), "NCCL run said") {
		t.Errorf("sources %q", s.Sources)
	}
}

// At the M where the capture failed, the script's error is the reason the
// burst has no figure between GEMMs: the budget says it there, and not at
// another M (whose own warning says it was not tried).
func TestBudgetSaysTheCaptureErrorAtItsM(t *testing.T) {
	capture := func(m int) []any {
		return []any{phases.KindNCCLError, phases.ScriptError{What: "all-reduces between GEMMs in a CUDA graph", Step: m, Err: "operation not permitted when stream is capturing"}}
	}
	level := []any{phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}}
	burst1 := []any{phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2}}
	s := Budget(budgetEvents(slices.Concat(level, capture(1), burst1)...)).Single
	if src := strings.Join(s.Sources, "\n"); !strings.Contains(src, "as the NCCL run said: error: all-reduces between GEMMs in a CUDA graph: operation not permitted") {
		t.Errorf("the failure at M=1 is not said:\n%s", src)
	}
	s = Budget(budgetEvents(slices.Concat(level, capture(8), burst1)...)).Single
	if src := strings.Join(s.Sources, "\n"); strings.Contains(src, "operation not permitted") {
		t.Errorf("a failure at M=8 said of M=1:\n%s", src)
	}
}

// The words on a burst without its figure between GEMMs are those of the
// run that timed it: a later NCCL run at other sizes (here with
// --no-graph) neither drops them nor puts its own in their place.
func TestBudgetWarnsFromTheBurstsRun(t *testing.T) {
	notSlower := "between GEMMs: the graph with all-reduces at M=1 was not slower than the GEMMs alone (2.114 ms vs 2.120 ms): no figure"
	noGraph := "CUDA graph: not captured (--no-graph): no graph or between-GEMMs figure at any M"
	s := Budget(budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL},
		phases.KindNCCLWarning, phases.NCCLWarning{M: 1, Text: notSlower},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 13, TotalMs: 4, GraphMs: 2},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL},
		phases.KindNCCLWarning, phases.NCCLWarning{Text: noGraph},
		phases.KindNCCLBurst, phases.NCCLBurst{M: 8, Count: 13, TotalMs: 5})).Single
	src := strings.Join(s.Sources, "\n")
	if !near(s.AllReduceMs, 2) || !strings.Contains(src, "as the NCCL run said: "+notSlower) || strings.Contains(src, "--no-graph") {
		t.Fatalf("%v ms, sources:\n%s", s.AllReduceMs, src)
	}
}

// TestNotAccountedUnderAHundredthIsZero: a remainder of -0.001 ms is 0 in
// the split (and so in every view), not -0.00.
func TestNotAccountedUnderAHundredthIsZero(t *testing.T) {
	b := BudgetSplit{Whole: &TPOTSplit{TPOTms: 10, NotAccountedMs: -0.001, Parts: []TPOTPart{{Name: PartGEMM, Ms: 10.001}}}}
	b.headline()
	last := b.Split[len(b.Split)-1]
	if last.Name != PartNotAcc || last.Ms != 0 || last.Pct != 0 || strings.Contains(b.Headline, "-0.00") {
		t.Fatalf("%+v\n%s", last, b.Headline)
	}
}

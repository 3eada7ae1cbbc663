package report

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A variant's sweep stays in its own part: the baseline's budget and
// summary read the baseline's levels alone, and the variants table lists
// the variant with its state and evidence.
func TestNotebookBaselineReadsItsOwnEvents(t *testing.T) {
	spec := phases.VariantSpec{Name: "cap-64", Args: []string{"--max-num-seqs 64"}}
	evs := budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10},
		phases.KindVariantPlanned, phases.VariantPlanned{Variants: []phases.VariantSpec{spec, {Name: "bad", Launch: "x"}}},
		phases.KindVariantPredicted, phases.VariantPrediction{Variant: "cap-64", CannotPredict: "no model for this change"},
		phases.KindVariantStarted, phases.VariantStarted{Spec: spec, Launch: "vllm serve m --max-num-seqs 64"},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 77},
		phases.KindVariantFinished, phases.VariantFinished{Name: "cap-64", State: phases.StepDone},
		phases.KindVariantStarted, phases.VariantStarted{Spec: phases.VariantSpec{Name: "bad", Launch: "x"}, Launch: "x"},
		phases.KindVariantFinished, phases.VariantFinished{Name: "bad", State: phases.StepFailed, Evidence: "sh: x: command not found"},
	)
	if got, want := Budget(VariantEvents(evs)[phases.Baseline]).Single.TPOTms, 10.0; got != want {
		t.Fatalf("the baseline's TPOT %v, want %v", got, want)
	}
	md, _ := RenderNotebook(evs, NotebookOptions{Location: time.UTC})
	s := string(md)
	if strings.Contains(s, "77") {
		t.Errorf("the variant's TPOT 77 ms reaches the baseline's part:\n%s", s)
	}
	for _, want := range []string{"## Variants", "| cap-64 | `--max-num-seqs 64` | done |", "| bad | launch `x` | failed: sh: x: command not found |",
		"- **cap-64**: not predicted: no model for this change"} {
		if !strings.Contains(s, want) {
			t.Errorf("notebook lacks %q:\n%s", want, s)
		}
	}
}

// An error that rounds to nothing reads +0%, never -0%, in every view of a
// variant.
func TestVariantFigureZeroError(t *testing.T) {
	p := phases.Predicted{Value: 13, OK: true}
	if got := VariantFigure(p, 12.99, true); got != "13 (13, +0%)" {
		t.Fatalf("got %q", got)
	}
	if got := VariantFigure(p, 13.2, true); got != "13.2 (13, +2%)" {
		t.Fatalf("got %q", got)
	}
}

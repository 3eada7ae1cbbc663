package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

func plateauEv(c int, tokS float64) phases.Event {
	return phases.Event{Kind: phases.KindMacroLevel, Data: phases.LevelResult{Concurrency: c, Completed: 10, OutputThroughput: tokS}}
}

// TestBestVariant: the baseline's best level 1000 tok/s, variant a 1500 and a
// failed variant b; a is best by +50%. With the SLO searched in every one,
// the SLO capacity decides instead.
func TestBestVariant(t *testing.T) {
	a, b := phases.VariantSpec{Name: "a"}, phases.VariantSpec{Name: "b"}
	evs := []phases.Event{
		plateauEv(64, 1000),
		{Kind: phases.KindVariantPlanned, Data: phases.VariantPlanned{Variants: []phases.VariantSpec{a, b}}},
		{Kind: phases.KindVariantStarted, Data: phases.VariantStarted{Spec: a}},
		plateauEv(128, 1500),
		{Kind: phases.KindVariantFinished, Data: phases.VariantFinished{Name: "a", State: phases.StepDone}},
		{Kind: phases.KindVariantStarted, Data: phases.VariantStarted{Spec: b}},
		plateauEv(128, 9000),
		{Kind: phases.KindVariantFinished, Data: phases.VariantFinished{Name: "b", State: phases.StepFailed}},
	}
	if got := BestVariant(evs); got != "a, by its highest throughput: 1500 tok/s against the baseline's 1000 tok/s (+50%)" {
		t.Fatalf("got %q", got)
	}
	search := func(v float64) phases.Event {
		return phases.Event{Kind: phases.KindMacroSearch, Data: phases.Search{Answer: v, Done: true}}
	}
	evs = append(evs[:1], append([]phases.Event{search(40)}, evs[1:]...)...)
	evs = append(evs[:4], append([]phases.Event{search(30)}, evs[4:]...)...)
	got := BestVariant(evs)
	if !strings.HasPrefix(got, "baseline, by its SLO capacity (40)") {
		t.Fatalf("got %q", got)
	}
	if BestVariant(evs[:1]) != "" {
		t.Fatal("a best variant without variants")
	}
}

package report

import (
	"math"
	"strings"
	"testing"
)

// The H100 campaign's variants, planned for 40 req/s within tpot=40ms at
// $2.50 a GPU-hour. Worked by hand from the journal: the baseline's
// replica (TP 1, one GPU) is planned at 21.3 req/s (3419 tok/s at its
// plateau); cap64 is predicted at 2552 tok/s, so one replica at 21.3 ×
// 2552/3419 = 15.9 req/s and 40/15.9 = 2.5 → 3 GPUs; chunked at 6016
// tok/s: 21.3 × 6016/3419 = 37.5 req/s, 40/37.5 = 1.07 → 2 GPUs. Cost:
// $2.50 × 1 GPU ÷ (2552 tok/s × 3600 s) × 10⁶ = $0.272 per million
// output tokens for cap64, $0.115 for chunked; measured at their own
// plateaus (2520 and 5204 tok/s) $0.276 and $0.133.
func TestVariantFleetsH100(t *testing.T) {
	rr, err := ReadJournalFile(h100Campaign)
	if err != nil {
		t.Fatal(err)
	}
	ask := FleetAsk{Capacity: &CapacityAsk{Rate: 40, SLO: "tpot=40ms", Headroom: 0.2}, GPUHour: 2.5}
	fl := VariantFleets(rr.Events, ask)
	for _, w := range []struct {
		name                   string
		gpus, gpusPred         int
		cost, costPred, within float64
	}{
		{"cap64", 3, 3, 0.276, 0.272, 0.002},
		{"chunked", 2, 2, 0.133, 0.115, 0.002},
	} {
		f := fl[w.name]
		if f.GPUs == nil || f.GPUsPredicted == nil || f.USDPerMTok == nil || f.USDPerMTokPredicted == nil {
			t.Fatalf("%s: a figure missing: %+v", w.name, f)
		}
		if *f.GPUs != w.gpus || *f.GPUsPredicted != w.gpusPred {
			t.Errorf("%s: %d GPUs (predicted %d), want %d (%d): %s", w.name, *f.GPUs, *f.GPUsPredicted, w.gpus, w.gpusPred, f.Model)
		}
		if math.Abs(*f.USDPerMTok-w.cost) > w.within || math.Abs(*f.USDPerMTokPredicted-w.costPred) > w.within {
			t.Errorf("%s: $%.4f/M (predicted $%.4f), want $%.3f ($%.3f)", w.name, *f.USDPerMTok, *f.USDPerMTokPredicted, w.cost, w.costPred)
		}
	}
	// Without a capacity section or a price, no figure and no column.
	if len(VariantFleets(rr.Events, FleetAsk{})) != 0 {
		t.Error("fleet figures without anything asked")
	}
	b, err := RenderNotebook(rr.Events, NotebookOptions{Capacity: ask.Capacity, GPUHour: ask.GPUHour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| J/token | GPUs for the target | $/M output tok |") || !strings.Contains(string(b), "| 3 (3, +0%) | 0.276 (0.272, +1%) |") {
		t.Errorf("the variants table has no fleet columns:\n%s", b)
	}
	if b, _ := RenderNotebook(rr.Events, NotebookOptions{}); strings.Contains(string(b), "GPUs for the target") {
		t.Error("a GPUs column without a capacity section")
	}
}

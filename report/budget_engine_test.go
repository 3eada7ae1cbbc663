package report

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A profile window at C=1 puts the engine's split beside the isolated
// benchmarks' in the budget, and the notebook shows both and the difference.
func TestBudgetInTheEngine(t *testing.T) {
	evs := seedEvents()
	at := evs[len(evs)-1].Time.Add(time.Minute)
	win := func(c int, comm, gemm, attn, moe, other float64) phases.Event {
		per := map[string]float64{"communication": comm, "gemm": gemm, "attention": attn, "moe": moe, "other": other}
		cats, total := map[string]float64{}, 0.0
		for k, v := range per {
			cats[k], total = 50*v, total+50*v
		}
		return phases.New(at, phases.KindProfileSummary, phases.ProfileSummary{Level: c, Concurrency: []int{c}, TotalCUDAUs: total,
			Categories: cats, DecodeSteps: 50, DecodeStepsSource: "counted in the trace: 50 annotations", PerStepUs: per})
	}
	evs = append(evs, win(1, 6100, 2900, 900, 1200, 600), win(128, 9000, 4000, 2000, 3000, 900))
	b := Budget(evs)
	e := b.Single.Engine
	if e == nil || e.CommMs != 6.1 || e.GEMMms != 2.9 || e.StepMs < 11.69 || e.StepMs > 11.71 || e.Steps != 50 {
		t.Fatalf("single stream engine split: %+v", e)
	}
	if b.Plateau == nil || b.Plateau.Engine == nil || b.Plateau.Engine.CommMs != 9 {
		t.Fatalf("plateau engine split: %+v", b.Plateau)
	}
	md, err := RenderNotebook(evs, goldenOpts())
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{
		"- cross-check, not added to the parts: NCCL's all-reduce burst at M=1 6.39 ms against the engine's communication 6.10 ms; " +
			"micro's GEMMs at M=1 3.50 ms against the engine's GEMM + MoE kernels 4.10 ms",
		"in the engine: torch profile window at C=1, 50 decode steps",
		"#### C=128 window",
		"| communication | 450.00 | 47.6% | 9.000 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
}

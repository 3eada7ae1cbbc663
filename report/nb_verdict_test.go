package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// TestVerdictQuotesBudget: an engine-step plateau in a campaign where Micro
// and NCCL ran quotes the decode-time budget at the plateau's C.
func TestVerdictQuotesBudget(t *testing.T) {
	evs := seedEvents()
	found := false
	for i, ev := range evs {
		if p, ok := ev.Data.(phases.Plateau); ok {
			p.Reason = "engine_step"
			p.Evidence = "plateau at C=128: all 256 requests running, none waiting, KV 40%, TPOT 80.9 ms at C=256 against 12.4 ms at C=1 (engine_step): the decode step grows with the batch — see the decode-time budget"
			p.SLO = "largest C meeting the SLO (tpot=50ms for 90% of requests): 32"
			evs[i].Data = p
			found = true
		}
	}
	if !found {
		t.Fatal("the seed campaign has no plateau")
	}
	md, err := RenderNotebook(evs, NotebookOptions{Campaign: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	want := "**Why:** `engine_step` — plateau at C=128: all 256 requests running"
	if !strings.Contains(s, want) || !strings.Contains(s, "(GEMM 50%, communication 20% of the mean TPOT)") ||
		!strings.Contains(s, "largest C meeting the SLO (tpot=50ms for 90% of requests): 32") {
		t.Fatalf("notebook lacks the verdict with its budget:\n%s", s)
	}
	// Without Micro and NCCL the line says what would split the step.
	p := phases.Plateau{Concurrency: 128, Reason: "engine_step", Evidence: "plateau at C=128: …"}
	if v := Verdict(p, "", Budget(nil)); !strings.Contains(v, "needs the Micro and NCCL phases") {
		t.Errorf("verdict %q", v)
	}
	// Other classes quote no budget.
	p = phases.Plateau{Concurrency: 128, Reason: "max_num_seqs", Evidence: "plateau at C=128: 128 of 128 sequences running"}
	if v := Verdict(p, "", Budget(evs)); strings.Contains(v, "of the step") || !strings.HasPrefix(v, "`max_num_seqs` — plateau at C=128") {
		t.Errorf("verdict %q", v)
	}
}

// TestGoodputAndRepeatsInNotebook: each level's goodput and repeats are listed.
func TestGoodputAndRepeatsInNotebook(t *testing.T) {
	evs := budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, Completed: 10, OutputThroughput: 500,
			Goodput: &phases.Goodput{Good: 9, Share: 0.9, RequestGoodput: 1.5, TokenGoodput: 450, Met: true},
			Repeats: &phases.Repeats{N: 3, Mean: map[string]float64{"output_throughput": 500, "median_tpot_ms": 12}, CI95: map[string]float64{"output_throughput": 20, "median_tpot_ms": 0.5}}},
		phases.KindMacroSLO, phases.SLOMet{Spec: "ttft=2s", MaxConcurrency: 8, Text: "largest C meeting the SLO (ttft=2s for 90% of requests): 8"},
	)
	md, _ := RenderNotebook(evs, NotebookOptions{Campaign: "x"})
	s := string(md)
	for _, want := range []string{"C=8: goodput 1.50 req/s, 450.0 tok/s; 90% of requests within the SLO (meets it)",
		"C=8: 3 runs, output 500.0 ± 20.0 tok/s", "**SLO:** largest C meeting the SLO"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
}

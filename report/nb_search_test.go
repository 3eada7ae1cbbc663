package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// TestSearchInNotebook: the SLO search's answer is beside the plateau's
// why (and in the summary), its steps are listed with their verdicts, and
// an open-loop level's schedule says when the client fell behind.
func TestSearchInNotebook(t *testing.T) {
	up := 116.0
	text := "largest C meeting the SLO (tpot=50ms for 90% of requests): C=112, the limit in [112, 116) — 12 run(s)"
	evs := budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 64, Completed: 128, OutputThroughput: 1500},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 128, Completed: 256, OutputThroughput: 1600},
		phases.KindMacroLevel, phases.LevelResult{Rate: 24, Completed: 40, Schedule: &phases.Schedule{Arrivals: "poisson", RequestedRate: 24,
			ScheduledRate: 24.4, AchievedRate: 17, P50DelayMs: 30, P99DelayMs: 90, FellBehind: true, LatencyFrom: "intended"}},
		phases.KindMacroPlateau, phases.Plateau{Concurrency: 64, OutputThroughput: 1500, Reason: "max_num_seqs", Evidence: "plateau at C=64: 64 of 64 sequences running"},
		phases.KindMacroSearch, phases.Search{Mode: "concurrency", Unit: "concurrency", SLO: "tpot=50ms", RequiredShare: 0.9, Answer: 112, Lower: 112, Upper: &up,
			Runs: 12, Done: true, StoppedBecause: "slo", Text: text, Steps: []phases.SearchStep{
				{Value: 128, Phase: "ladder", Runs: 1, Share: 0.34, ShareLow: 0.28, ShareHigh: 0.4, Why: "slo"},
				{Value: 112, Phase: "bisect", Runs: 3, Share: 0.91, ShareLow: 0.88, ShareHigh: 0.94, Met: true, Uncertain: true}}},
		phases.KindMacroSLO, phases.SLOMet{Spec: "tpot=50ms", MaxConcurrency: 112, Text: text},
	)
	md, _ := RenderNotebook(evs, NotebookOptions{Campaign: "x"})
	s := string(md)
	for _, want := range []string{"**SLO search (concurrency):** " + text, "| ladder | 128 | 1 | 34% | 28–40% | misses (slo) |",
		"| bisect | 112 | 3 | 91% | 88–94% | meets, inside its noise |", "- **SLO capacity:** " + text,
		"- 24 req/s (poisson arrivals): sent 17 req/s of 24.4 scheduled; scheduling delay p50 30.0 ms, p99 90.0 ms; TTFT and E2EL from the intended send time — **the client fell behind**"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "**Why:**"), strings.Index(s, "**SLO search"); i < 0 || j < i || !strings.Contains(s[i:j], "C=112") {
		t.Errorf("the search's answer is not beside the plateau's why:\n%s", s)
	}
}

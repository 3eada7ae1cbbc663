package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// The server's signals per level: vLLM's preemptions, prefix-cache hit
// rate and speculative acceptance and accepted length in their columns;
// an SGLang sweep has retracted requests where vLLM has preemptions.
func TestNotebookServerSignals(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	lv := func(c int, s phases.ServerLevel) phases.LevelResult {
		s.Available = true
		return phases.LevelResult{Concurrency: c, Completed: 10, OutputThroughput: float64(c) * 100, MedianTPOTms: 10, Server: &s}
	}
	evs := budgetEvents(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro"},
		phases.KindMacroLevel, lv(1, phases.ServerLevel{Engine: "vllm", MaxKVCacheUsage: 0.1, MeanRunning: 1, Preemptions: 0,
			PrefixCacheHitRate: f(0.25), SpecAcceptRate: f(0.6), SpecAcceptLength: f(2.8)}),
		phases.KindMacroLevel, lv(64, phases.ServerLevel{Engine: "vllm", MaxKVCacheUsage: 0.97, MeanRunning: 60, MeanWaiting: 3.5, MaxWaiting: 9,
			Preemptions: 12, PrefixCacheHitRate: f(0.5)}))
	md, _ := RenderNotebook(evs, NotebookOptions{})
	for _, want := range []string{"Server signals per level, from the server's /metrics (vllm):",
		"| C | KV max | running mean | waiting mean (max) | preemptions | prefix cache hit | spec accept | mean accepted length |",
		"| 1 | 10% | 1.0 | 0.0 (0) | 0 | 25.0% | 60.0% | 2.80 |",
		"| 64 | 97% | 60.0 | 3.5 (9) | 12 | 50.0% | — | — |", "1 + accepted tokens ÷ drafts"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("notebook lacks %q:\n%s", want, md)
		}
	}
	evs = budgetEvents(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro"},
		phases.KindMacroLevel, lv(8, phases.ServerLevel{Engine: "sglang", MaxKVCacheUsage: 0.5, MeanRunning: 8, MaxRetracted: f(2)}))
	md, _ = RenderNotebook(evs, NotebookOptions{})
	if !strings.Contains(string(md), "| C | KV max | running mean | waiting mean (max) | retracted max |") || !strings.Contains(string(md), "| 8 | 50% | 8.0 | 0.0 (0) | 2 |") {
		t.Errorf("SGLang table:\n%s", md)
	}
}

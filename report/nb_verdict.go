package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// Verdict is the plateau's verdict line for the notebook: its class and
// evidence; for an engine-step plateau, the decode-time budget at that
// concurrency when Micro and NCCL have run; then the SLO and noise notes.
func Verdict(p phases.Plateau, slo string, bud BudgetResult) string {
	if p.Reason == "" {
		return ""
	}
	if p.SLO == "" {
		p.SLO = slo
	}
	line := fmt.Sprintf("`%s` — %s", p.Reason, macro.VerdictLine(&p))
	if p.Reason == macro.LimitStep {
		line += " " + budgetQuote(bud)
	}
	return line
}

// budgetQuote is the budget at the plateau's concurrency in words, its
// three largest parts, e.g. "(GEMM 42%, communication 27%, prefill 15% of
// the mean TPOT)".
func budgetQuote(bud BudgetResult) string {
	b := bud.Plateau
	if b == nil || !b.HasTPOT || (len(b.Split) == 0 && !b.HasAR && !b.HasGEMM) {
		return "(the decode-time budget needs the Micro and NCCL phases or a profile: run them to split the step)"
	}
	var parts []string
	for _, p := range b.Largest(3) {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", p.Name, p.Pct))
	}
	of := "of the mean TPOT"
	if len(b.Split) == 0 {
		of = "of the median TPOT"
	}
	return "(" + strings.Join(parts, ", ") + " " + of + ")"
}

// levelName is a level in a line of text: C=8, an open loop's rate, and
// a replayed trace's speed.
func levelName(l phases.LevelResult) string {
	name := phases.LevelName(l.Concurrency, l.Rate)
	if sc := l.Schedule; sc != nil && sc.TraceSpeed > 0 {
		name += fmt.Sprintf(" (the trace at %.3g×)", sc.TraceSpeed)
	}
	return name
}

// goodputLines lists each level's goodput under the sweep's SLO.
func (n *nb) goodputLines(levels []phases.LevelResult) {
	var out []string
	for _, l := range levels {
		g := l.Goodput
		if g == nil {
			continue
		}
		met := "meets"
		if !g.Met {
			met = "misses"
		}
		out = append(out, fmt.Sprintf("- %s: goodput %.2f req/s, %.1f tok/s; %.0f%% of requests within the SLO (%s it)",
			levelName(l), g.RequestGoodput, g.TokenGoodput, 100*g.Share, met))
	}
	for _, l := range levels {
		if r := l.Repeats; r != nil {
			out = append(out, fmt.Sprintf("- C=%d: %d runs, output %.1f ± %.1f tok/s, TPOT p50 %.2f ± %.2f ms (means, 95%% CI)",
				l.Concurrency, r.N, r.Mean["output_throughput"], r.CI95["output_throughput"], r.Mean["median_tpot_ms"], r.CI95["median_tpot_ms"]))
		}
	}
	if len(out) > 0 {
		n.ln(strings.Join(out, "\n") + "\n")
	}
}

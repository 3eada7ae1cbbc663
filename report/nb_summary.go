package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// summary is the notebook's first section: the answers, each in a line
// (the plateau and why, the SLO's capacity, TPOT at C=1 and at the plateau
// with the budget's largest parts, the load's time and any stall, what to
// try next), before the header and the evidence.
func (n *nb) summary(c *classified, all []phases.Event) {
	var lines []string
	p, slo := lastPlateau(c.runs[phases.Macro])
	switch {
	case p != nil:
		why := Verdict(*p, "", n.bud)
		if why == "" {
			why = "doubling C adds less than 10%; what limits it was not classified"
		}
		why = strings.Replace(why, fmt.Sprintf("plateau at C=%d: ", p.Concurrency), "", 1)
		lines = append(lines, fmt.Sprintf("- **Plateau:** C=%d at %s tok/s — %s", p.Concurrency,
			units.Thousands(p.OutputThroughput), why))
	case replayedTrace(c.runs[phases.Macro]) != nil:
		lines = append(lines, "- **Plateau:** none: the sweep replayed a trace, its levels are speeds, not concurrencies")
	case len(c.runs[phases.Macro]) > 0:
		lines = append(lines, "- **Plateau:** none named: throughput still grew at the last level (add higher concurrencies)")
	}
	if slo != "" {
		lines = append(lines, "- **SLO capacity:** "+slo)
	}
	if t := tpotLine(n.bud); t != "" {
		lines = append(lines, "- **TPOT:** "+t)
	}
	if b := n.bud.Plateau; b != nil && b.HasTPOT {
		lines = append(lines, "- **Budget at the plateau:** "+b.Headline)
	} else if n.bud.Single.HasTPOT || n.bud.Single.HasAR || n.bud.Single.HasGEMM {
		lines = append(lines, "- **Budget, single stream:** "+n.bud.Single.Headline)
	}
	if l := loadSummary(c.runs[phases.Load]); l != "" {
		lines = append(lines, "- **Load:** "+l)
	}
	if b := BestVariant(all); b != "" {
		lines = append(lines, "- **Best variant:** "+b)
	}
	lines = append(lines, "- **Next:** "+nextStep(c, p, n.bud))
	n.ln("## Summary\n")
	n.ln(strings.Join(lines, "\n") + "\n")
}

// tpotLine is TPOT at C=1 and at the plateau, each with the budget's
// three largest parts in percent.
func tpotLine(bud BudgetResult) string {
	var out []string
	for _, b := range []*BudgetSplit{&bud.Single, bud.Plateau} {
		if b == nil || !b.HasTPOT {
			continue
		}
		s := fmt.Sprintf("C=%d %s", b.Concurrency, strings.TrimPrefix(b.TPOTLabel(), "TPOT "))
		if b != &bud.Single {
			s = "at the plateau " + s
		}
		var ps []string
		for _, p := range b.Largest(3) {
			ps = append(ps, fmt.Sprintf("%s %.0f%%", p.Name, p.Pct))
		}
		if len(ps) > 0 {
			s += ": " + strings.Join(ps, ", ")
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// lastPlateau is the plateau and SLO line of the latest sweep that has one.
func lastPlateau(runs []*phaseRun) (*phases.Plateau, string) {
	for i := len(runs) - 1; i >= 0; i-- {
		if m := macroOf(runs[i].events); m.plateau != nil || m.slo != "" {
			return m.plateau, m.slo
		}
	}
	return nil, ""
}

// replayedTrace is the last sweep with levels when it replayed a trace
// (a level with a replay speed), else nil.
func replayedTrace(runs []*phaseRun) *macroEvents {
	for i := len(runs) - 1; i >= 0; i-- {
		m := macroOf(runs[i].events)
		if len(m.levels) == 0 {
			continue
		}
		for _, l := range m.levels {
			if l.Schedule != nil && l.Schedule.TraceSpeed > 0 {
				return &m
			}
		}
		return nil
	}
	return nil
}

// loadSummary is the latest load in a line: how long it took to ready,
// its stalls and its failure.
func loadSummary(runs []*phaseRun) string {
	for i := len(runs) - 1; i >= 0; i-- {
		var parts []string
		ready, stalls := -1.0, 0
		var fail string
		for _, ev := range runs[i].events {
			switch d := ev.Data.(type) {
			case phases.Milestone:
				if d.Stage == phases.StageReady {
					ready = d.AtS
				}
			case phases.Stall:
				stalls++
			case phases.LoadFailure:
				fail = d.Kind
			}
		}
		if ready < 0 && stalls == 0 && fail == "" {
			continue // a run with nothing to say (a server already up)
		}
		if ready >= 0 {
			parts = append(parts, "ready in "+units.ExactDuration(ready))
		} else {
			parts = append(parts, "not ready")
		}
		if stalls > 0 {
			parts = append(parts, fmt.Sprintf("%d stall(s), see Load", stalls))
		}
		if fail != "" {
			parts = append(parts, "failed: "+fail)
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// nextStep is what the campaign lacks first; else what the budget at the
// plateau points to (its largest part, and what is not accounted for),
// beside the plateau's own fix, never a repeat of it.
func nextStep(c *classified, p *phases.Plateau, bud BudgetResult) string {
	switch {
	case len(c.runs[phases.Macro]) == 0:
		return "run the concurrency sweep (`profdeck sweep`, or pane 2 `s`)"
	case p == nil && replayedTrace(c.runs[phases.Macro]) != nil:
		if m := replayedTrace(c.runs[phases.Macro]); m.search == nil {
			return "replay the trace at speeds up to the SLO's limit (`profdeck sweep --dataset FORMAT FILE --search speed --slo SPEC`), then plan it with `profdeck capacity --trace FILE`"
		}
		return "plan the trace's traffic on its replays (`profdeck capacity --trace FILE`), or cut a longer window of it (`--trace-start`, `--trace-duration`)"
	case p == nil:
		return "sweep higher concurrencies until throughput stops growing"
	case len(c.runs[phases.Micro]) == 0 || len(c.runs[phases.NCCL]) == 0:
		return "run Micro and NCCL (`profdeck micro`, `profdeck nccl`) to split the decode step"
	case len(c.runs[phases.Profile]) == 0:
		return "capture a torch profile (`profdeck profile`) to check the split against the kernels"
	}
	b := bud.Plateau
	if b == nil || len(b.Split) == 0 {
		return "beyond the plateau's fix, split the decode step at the plateau (`profdeck profile` at its C) to see where its time goes"
	}
	var out []string
	if b.Close != "" {
		out = append(out, "close the budget first: "+b.Close)
	}
	for _, q := range b.Largest(2) {
		if t := tryFor(q, b); t != "" {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "beyond the plateau's fix, no part of the budget stands out (each under 20% of TPOT)"
	}
	return "beyond the plateau's fix, from the budget at C=" + fmt.Sprint(b.Concurrency) + ": " + strings.Join(out, "; ")
}

// tryFor is what to try for one large part of the budget, with the TPOT
// halving the part would give; "" for a part under 20% of TPOT.
func tryFor(q BudgetPart, b *BudgetSplit) string {
	if q.Pct < 20 {
		return ""
	}
	tpot := b.MeanTPOTms
	gain := fmt.Sprintf("halving it brings the mean TPOT from %.2f to %.2f ms (−%.0f%%)", tpot, tpot-q.Ms/2, q.Pct/2)
	what := map[string]string{
		PartComm:      "expert parallelism (--enable-expert-parallel), speculative decoding (fewer steps per token) or a faster all-reduce (custom all-reduce, NVLS)",
		PartGEMM:      "a smaller weight format (FP8 or int4 for the dense layers), expert parallelism to spread the experts, or speculative decoding (more tokens per weight read)",
		PartAttention: "a smaller KV format (FP8 KV cache), or shorter contexts per step",
		PartOther:     "fusions (norms, activations, sampling) or CUDA graphs for the whole step",
		PartHost:      "CUDA graphs for the step or async scheduling (the host's launches between steps)",
		PartPrefill:   "a smaller prefill chunk (--max-num-batched-tokens) or prefill on other GPUs (disaggregated prefill)",
	}[q.Name]
	if what == "" {
		return ""
	}
	return fmt.Sprintf("%s is %.0f%% of TPOT (%.2f ms): try %s; %s", q.Name, q.Pct, q.Ms, what, gain)
}

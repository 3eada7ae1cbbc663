package report

import (
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// capacity writes the capacity plan the campaign asks for (its capacity
// section), from the journal's last sweep with finished levels: the
// answer, the curve it read, Little's law and every estimate.
func (n *nb) capacity(c *classified) {
	ask := n.opts.Capacity
	if ask == nil {
		return
	}
	n.ln("## Capacity\n")
	runs := c.runs[phases.Macro]
	var sw Sweep
	for i := len(runs) - 1; i >= 0; i-- {
		if sw = journalSweep(n.opts.Journal, c, i); len(sw.Levels) > 0 {
			break
		}
	}
	if len(sw.Levels) == 0 {
		n.ln("The campaign asks for a capacity plan, but no sweep has finished a level yet.\n")
		return
	}
	p, err := PlanCapacity(sw, *ask)
	if err != nil {
		n.p("No plan: %s.\n\n", err)
		return
	}
	n.p("**%s**\n\n", mdCell(p.Text))
	if t := traceSpeedPlan(sw, *ask); t != "" {
		n.p("- the sweep's own trace: %s\n", mdCell(t))
	}
	if p.Replica != nil {
		n.p("- %s\n", p.Traffic.Little)
	}
	if d := p.Deployment; d != nil {
		n.p("- one replica: %s = %d GPUs on %d node(s), from %s\n", parallelText(*d), d.GPUs, d.Nodes, d.Source)
	}
	n.p("- SLO %s for %.0f%% of requests (%s), judged on %s; headroom %.0f%%; the %s\n\n",
		p.SLO.Spec, 100*p.SLO.Share, p.SLO.From, p.SLO.JudgedBy, 100*p.Headroom, sw.Source)
	keys := figureKeys(p.Curve.Points)
	n.p("| level | req/s | out tok/s | E2E mean ms | %s | SLO |\n", strings.Join(keys, " | "))
	n.p("|---:|---:|---:|---:|%s---|\n", strings.Repeat("---:|", len(keys)))
	for _, pt := range p.Curve.Points {
		verdict := "met"
		if !pt.Met {
			verdict = "**missed**"
		}
		cells := make([]string, len(keys))
		for i, k := range keys {
			cells[i] = figureText(k, pt.Figures)
		}
		n.p("| %s | %.3g | %.0f | %.0f | %s | %s |\n", loadName(pt.Load, p.Curve.Unit), pt.RequestThroughput, pt.OutputThroughput,
			pt.MeanE2ELms, strings.Join(cells, " | "), verdict)
	}
	n.ln("")
	for _, w := range p.Warnings {
		n.p("- warning: %s\n", w)
	}
	if len(p.Warnings) > 0 {
		n.ln("")
	}
}

// traceSpeedPlan is, when the sweep replayed a trace and the campaign's
// traffic is not that trace, the plan for the trace as recorded: the
// fastest replay within the SLO turned into replicas and GPUs, as
// capacity --trace gives it ("" otherwise).
func traceSpeedPlan(sw Sweep, ask CapacityAsk) string {
	if sw.Trace == nil || sw.Trace.File == "" || ask.Trace != "" {
		return ""
	}
	ask.Trace, ask.Users, ask.Think = sw.Trace.File, 0, 0
	ask.Rate = max(sw.Trace.MeanRate, 1e-9) // the plan reads the replays' speeds, not this rate
	p, err := PlanCapacity(sw, ask)
	if err != nil || p.Curve.Unit != unitSpeed || p.Replicas == nil {
		return ""
	}
	return p.Text
}

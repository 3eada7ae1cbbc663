package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// summary is the notebook's first section: the answers, each in a line
// (the plateau and why, the SLO's capacity, the budget's headline, the
// load's time and any stall, what to do next), before the evidence.
func (n *nb) summary(c *classified) {
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
	case len(c.runs[phases.Macro]) > 0:
		lines = append(lines, "- **Plateau:** none named: throughput still grew at the last level (add higher concurrencies)")
	}
	if slo != "" {
		lines = append(lines, "- **SLO capacity:** "+slo)
	}
	if b := n.bud.Plateau; b != nil && b.HasTPOT {
		lines = append(lines, "- **Budget at the plateau:** "+b.Summary())
	} else if n.bud.Single.HasTPOT || n.bud.Single.HasAR || n.bud.Single.HasGEMM {
		lines = append(lines, "- **Budget, single stream:** "+n.bud.Single.Summary())
	}
	if l := loadSummary(c.runs[phases.Load]); l != "" {
		lines = append(lines, "- **Load:** "+l)
	}
	lines = append(lines, "- **Next:** "+nextStep(c, p))
	n.ln("## Summary\n")
	n.ln(strings.Join(lines, "\n") + "\n")
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

// nextStep is what the campaign lacks first, else the plateau's fix.
func nextStep(c *classified, p *phases.Plateau) string {
	switch {
	case len(c.runs[phases.Macro]) == 0:
		return "run the concurrency sweep (`profdeck sweep`, or pane 2 `s`)"
	case p == nil:
		return "sweep higher concurrencies until throughput stops growing"
	case len(c.runs[phases.Micro]) == 0 || len(c.runs[phases.NCCL]) == 0:
		return "run Micro and NCCL (`profdeck micro`, `profdeck nccl`) to split the decode step"
	case len(c.runs[phases.Profile]) == 0:
		return "capture a torch profile (`profdeck profile`) to check the split against the kernels"
	}
	if i := strings.LastIndex(p.Evidence, " — "); i > 0 {
		return p.Evidence[i+len(" — "):]
	}
	return "see the verdict under Macro"
}

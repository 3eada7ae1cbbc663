package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases/units"
)

// wholeSplits writes, for each level with a TPOT, what a running request
// waits for per output token: the decode step, the prefills of others and
// what the measured parts leave of TPOT.
func (n *nb) wholeSplits(levels []BudgetSplit) {
	var ws []*TPOTSplit
	for _, l := range levels {
		if l.Whole != nil {
			ws = append(ws, l.Whole)
		}
	}
	if len(ws) == 0 {
		return
	}
	n.ln("### TPOT split whole, per level\n")
	n.ln("What a running request waits for per output token: its decode step, the prefills of the requests that " +
		"arrive while it decodes, and the rest. Each part names its source; what is not measured is listed, not folded into a part.\n")
	for _, w := range ws {
		n.wholeSplit(w)
	}
}

func (n *nb) wholeSplit(w *TPOTSplit) {
	n.p("#### C=%d\n\n", w.Concurrency)
	if m := w.Mix; m != nil {
		how := "prefills in steps of their own, between decode steps"
		if m.Mixed {
			how = "prefill chunks inside the decode steps"
		}
		line := fmt.Sprintf("Step mix (the engine's counters over the level's window, %.1f s): %.1f steps/s, %.1f tokens per step, %s prompt and %s generation tokens; %s; decode batch %.1f, %.1f prompt tokens per decode step",
			m.WindowS, m.StepsPerS, m.TokensPerStep, units.Thousands(m.PromptTokens), units.Thousands(m.GenerationTokens), how, m.Batch, m.PromptPerDecodeStep)
		if m.StepGEMMms > 0 {
			line += fmt.Sprintf("; a step of %.0f tokens spends %.2f ms in GEMMs (%s)", m.TokensPerStep, m.StepGEMMms, m.StepGEMMFrom)
		}
		n.ln(line + ".\n")
	}
	n.ln("| part | ms per token | % of TPOT | source |")
	n.ln("|---|---:|---:|---|")
	for _, p := range w.Parts {
		name := p.Group + " · " + p.Name
		if p.Group == p.Name {
			name = p.Name
		}
		if p.Estimate {
			name += " (estimate)"
		}
		n.p("| %s | %.2f | %.1f%% | %s |\n", name, p.Ms, 100*p.Ms/w.TPOTms, mdCell(p.Source))
	}
	n.p("| **measured parts** | **%.2f** | %.1f%% | |\n", w.SumMs, 100*w.SumMs/w.TPOTms)
	n.p("| not accounted for | %.2f | %.1f%% | the mean TPOT less the measured parts |\n", w.NotAccountedMs, 100*w.NotAccountedMs/w.TPOTms)
	n.p("| **TPOT** (mean; median %.2f) | **%.2f** | 100%% | the sweep's level: the parts are means over decode steps, so they split the mean |\n\n", w.MedianTPOTms, w.TPOTms)
	for _, u := range w.Unmeasured {
		n.p("- not measured: %s\n", u)
	}
	for _, x := range w.Warnings {
		n.p("- **warning:** %s\n", x)
	}
	n.ln("")
}

// groupLine is the split in one line by group, e.g. "decode step 15.5 ms,
// prefill 12.6 ms, not accounted 3.2 ms".
func (w *TPOTSplit) groupLine() string {
	var parts []string
	for _, g := range []string{GroupDecode, GroupPrefill, GroupScheduling} {
		found := false
		for _, p := range w.Parts {
			found = found || p.Group == g
		}
		if found {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", g, w.GroupMs(g)))
		}
	}
	parts = append(parts, fmt.Sprintf("not accounted %.2f ms", w.NotAccountedMs))
	return strings.Join(parts, ", ")
}

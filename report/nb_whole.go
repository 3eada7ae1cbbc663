package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases/units"
)

// budgetLevel writes one level's budget: its bar, the whole split's parts
// with their sources, what is not accounted for (and, above 10%, the
// measurement that would close it), then the isolated benchmarks beside as
// a cross-check.
func (n *nb) budgetLevel(b BudgetSplit) {
	w := b.Whole
	n.p("### %s\n\n", strings.ToUpper(b.Label[:1])+b.Label[1:])
	n.p("`%s` %s\n\n", TextBar(b.Parts(), 40), legendLine(b.Parts()))
	if m := w.Mix; m != nil {
		n.ln(mixLine(m) + ".\n")
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
		if p.Stale != "" {
			name += " (**" + p.Stale + "**)"
		}
		n.p("| %s | %.2f | %.1f%% | %s |\n", name, p.Ms, 100*p.Ms/w.TPOTms, mdCell(sourceTag(p.Step, p.Run, p.Level)+p.Source))
	}
	n.p("| **measured parts** | **%.2f** | %.1f%% | |\n", w.SumMs, 100*w.SumMs/w.TPOTms)
	n.p("| not accounted for | %.2f | %.1f%% | the mean TPOT less the measured parts |\n", w.NotAccountedMs, 100*w.NotAccountedMs/w.TPOTms)
	n.p("| **TPOT** (mean; median %.2f) | **%.2f** | 100%% | [macro %s] the sweep's level: the parts are means over decode steps, so they split the mean |\n\n",
		w.MedianTPOTms, w.TPOTms, runLevel(b.levelRun, b.Concurrency))
	if b.Close != "" {
		n.p("- **not accounted for above 10%% of TPOT:** to close it, %s\n", b.Close)
	}
	if x := crossCheck(b); x != "" {
		n.p("- cross-check, not added to the parts: %s\n", x)
	}
	for _, u := range w.Unmeasured {
		n.p("- not measured: %s\n", u)
	}
	for _, s := range b.Sources {
		n.p("- %s\n", s)
	}
	for _, m := range b.Missing {
		n.p("- missing: %s\n", m)
	}
	for _, x := range append(append([]string(nil), w.Warnings...), b.Warnings...) {
		n.p("- **warning:** %s\n", x)
	}
	n.ln("")
}

// mixLine is the level's step mix in a sentence.
func mixLine(m *StepMixView) string {
	how := "prefills in steps of their own, between decode steps"
	if m.Mixed {
		how = "prefill chunks inside the decode steps"
	}
	line := fmt.Sprintf("Step mix (the engine's counters over the level's window, %.1f s): %.1f steps/s, %.1f tokens per step, %s prompt and %s generation tokens; %s; decode batch %.1f, %.1f prompt tokens per decode step",
		m.WindowS, m.StepsPerS, m.TokensPerStep, units.Thousands(m.PromptTokens), units.Thousands(m.GenerationTokens), how, m.Batch, m.PromptPerDecodeStep)
	if m.StepGEMMms > 0 {
		line += fmt.Sprintf("; micro's isolated GEMMs for a step of %.0f tokens: %.2f ms (%s)", m.TokensPerStep, m.StepGEMMms, m.StepGEMMFrom)
	}
	return line
}

// crossCheck puts the isolated benchmarks beside the engine's own parts:
// the NCCL burst against the profile's communication, micro's GEMMs
// (experts included) against the profile's GEMM and MoE kernels.
func crossCheck(b BudgetSplit) string {
	e := b.Engine
	if e == nil {
		return ""
	}
	var out []string
	if b.HasAR {
		out = append(out, fmt.Sprintf("NCCL's all-reduce burst at M=%d %.2f ms against the engine's communication %.2f ms", b.Concurrency, b.AllReduceMs, e.CommMs))
	}
	if b.HasGEMM {
		g := fmt.Sprintf("micro's GEMMs at M=%d %.2f ms against the engine's GEMM + MoE kernels %.2f ms", b.Concurrency, b.GEMMms, e.GEMMms+e.MoEms)
		if b.UpperBoundMs > 0 {
			g += fmt.Sprintf(" (micro's quantized GEMMs timed in BF16, %.2f ms, kept out)", b.UpperBoundMs)
		}
		out = append(out, g)
	}
	return strings.Join(out, "; ")
}

// sourceTag names a part's measurement: "[profile #1, C=128] ".
func sourceTag(step string, run, level int) string {
	if step == "" {
		return ""
	}
	return "[" + step + " " + runLevel(run, level) + "] "
}

func runLevel(run, level int) string {
	s := ""
	if run > 0 {
		s = fmt.Sprintf("#%d, ", run)
	}
	return s + fmt.Sprintf("C=%d", level)
}

// legendLine names each rune of the bar.
func legendLine(ps []BudgetPart) string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Rune)+" "+p.Name)
	}
	return strings.Join(out, " ")
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

package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// mdCell makes s safe inside a markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// fence returns a code fence longer than any backtick run in s.
func fence(s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f
}

// title is the notebook's title and, for a simulated deployment, its
// banner; it returns the campaign's name.
func (n *nb) title(c *classified) string {
	name := n.opts.Campaign
	if name == "" {
		for _, s := range c.sessions {
			if s.Campaign != "" {
				name = s.Campaign
			}
		}
	}
	if name == "" {
		name = "profdeck campaign"
	}
	n.p("# %s\n\n", name)
	sim := false
	for _, s := range c.sessions {
		sim = sim || s.Simulated
	}
	if sim {
		n.ln("> **SIMULATED** — these figures come from profdeck's built-in simulated deployment, not a real server.\n")
	}
	return name
}

// headerTable is the campaign's metadata, after the Summary.
func (n *nb) headerTable(c *classified, events []phases.Event, name string) {
	n.ln("| | |")
	n.ln("|---|---|")
	n.p("| Campaign | %s |\n", mdCell(name))
	if !c.first.IsZero() {
		loc := n.opts.loc()
		from, to := c.first.In(loc), c.last.In(loc)
		span := from.Format("2006-01-02 15:04") + " – " + to.Format("15:04 MST")
		if from.Format("20060102") != to.Format("20060102") {
			span = from.Format("2006-01-02 15:04") + " – " + to.Format("2006-01-02 15:04 MST")
		}
		n.p("| Date | %s |\n", span)
	}
	if len(c.hosts) > 0 {
		n.p("| Host(s) | %s |\n", mdCell(strings.Join(c.hosts, ", ")))
	}
	if si := c.system; si != nil {
		n.systemRows(si, c.systems)
	} else {
		n.ln("| System | not gathered |")
	}
	if n.opts.Journal != "" {
		n.p("| Journal | `%s` (%d events) |\n", mdCell(n.opts.Journal), len(events))
	}
	n.p("| Written | %s |\n\n", n.stamp(n.opts.now()))
	if si := c.system; si != nil && si.LaunchCommand != "" {
		cmd := remote.ScrubSecrets(si.LaunchCommand)
		f := fence(cmd)
		n.p("Server launch command:\n\n%ssh\n%s\n%s\n\n", f, cmd, f)
		if env := launchEnv(events); env != "" {
			n.p("Its environment (names only; the values are never written): %s.\n\n", mdCell(env))
		}
	}
}

// launchEnv is the environment's variable names of the latest server
// start, as its event names them ("" when it set none).
func launchEnv(events []phases.Event) string {
	const mark = "(environment: "
	env := ""
	for _, ev := range events {
		if d, ok := ev.Data.(phases.ServerEvent); ok && d.Action == "start" {
			env = ""
			if i := strings.LastIndex(d.Detail, mark); i >= 0 {
				env = strings.TrimSuffix(d.Detail[i+len(mark):], ")")
			}
		}
	}
	return remote.ScrubSecrets(env)
}

// systemRows writes the system: on several nodes one row per node (its
// GPUs, driver and CUDA), then what the head says of torch, vLLM and model.
func (n *nb) systemRows(si *phases.SystemInfo, nodes []phases.SystemInfo) {
	if len(nodes) > 1 {
		for _, x := range nodes {
			n.p("| Node %s | %s · driver %s · CUDA %s |\n", mdCell(x.Host), mdCell(gpuText(&x)), orUnknown(x.Driver), orUnknown(x.CUDA))
		}
	} else {
		n.p("| GPUs | %s |\n", mdCell(gpuText(si)))
		n.p("| Driver / CUDA | %s / %s |\n", orUnknown(si.Driver), orUnknown(si.CUDA))
	}
	n.p("| torch / vLLM | %s / %s |\n", orUnknown(si.Torch), orUnknown(si.VLLM))
	if si.Model != "" || si.ModelSummary != "" {
		m := si.Model
		if si.ModelSummary != "" {
			if m != "" {
				m += " — "
			}
			m += si.ModelSummary
		}
		n.p("| Model | %s |\n", mdCell(m))
	}
	for _, x := range si.Extra {
		n.p("| Detail | %s |\n", mdCell(x))
	}
}

// gpuText is "8 × NVIDIA H200 (143771 MiB each)".
func gpuText(si *phases.SystemInfo) string {
	gpu := si.GPUName
	if gpu == "" {
		gpu = "unknown"
	}
	if si.GPUCount > 0 {
		gpu = fmt.Sprintf("%d × %s", si.GPUCount, gpu)
	}
	if si.GPUMemoryMiB > 0 {
		gpu += fmt.Sprintf(" (%d MiB each)", si.GPUMemoryMiB)
	}
	return gpu
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return mdCell(s)
}

func (n *nb) budget(b BudgetResult) {
	n.ln("## Decode-time budget\n")
	n.ln("The budget: each profiled level's mean TPOT split whole — the decode step as the engine ran it (communication; GEMM, " +
		"the routed and shared experts as served included; attention; the other kernels; the host's gaps), the prefills a running " +
		"request waits for, and what is not accounted for. Each part names its source [step #run, level]. Micro's and NCCL's isolated " +
		"figures at M = C are cross-checks beside the engine's, never added on top; without a profile window at a level they stand in, marked estimates.\n")
	levels := b.Levels
	if len(levels) == 0 {
		levels = []BudgetSplit{b.Single}
		if b.Plateau != nil {
			levels = append(levels, *b.Plateau)
		}
	}
	for _, l := range levels {
		if l.Whole != nil && len(l.Split) > 0 {
			n.budgetLevel(l)
		} else {
			n.budgetSplit(l)
		}
	}
	if b.Plateau == nil {
		n.ln("_At the plateau: no plateau named by a sweep yet._\n")
	}
	if b.ProfileCheck != "" {
		n.ln(strings.ToUpper(b.ProfileCheck[:1]) + b.ProfileCheck[1:] + ".\n")
	}
}

func (n *nb) budgetSplit(b BudgetSplit) {
	n.p("### %s\n\n", strings.ToUpper(b.Label[:1])+b.Label[1:])
	if b.Engine != nil {
		n.budgetBoth(b)
	} else if !b.Any() {
		n.ln("_No inputs measured yet._\n")
	} else {
		if b.HasTPOT {
			n.p("`%s` %s\n\n", TextBar(b.Parts(), 40), "█ all-reduce ▓ GEMM ░ rest")
		}
		n.ln("| part | ms | % of TPOT |")
		n.ln("|---|---:|---:|")
		if b.HasTPOT {
			for _, p := range b.Parts() {
				n.p("| %s | %.2f | %.1f%% |\n", p.Name, p.Ms, p.Pct)
			}
			n.p("| **TPOT** | **%.2f** | 100%% |\n\n", b.TPOTms)
		} else {
			if b.HasAR {
				n.p("| all-reduce | %.2f | — |\n", b.AllReduceMs)
			}
			if b.HasGEMM {
				n.p("| GEMM | %.2f | — |\n", b.GEMMms)
			}
			n.ln("| TPOT | not measured | |\n")
		}
	}
	for _, s := range b.Sources {
		n.p("- %s\n", s)
	}
	for _, m := range b.Missing {
		n.p("- missing: %s\n", m)
	}
	for _, w := range b.Warnings {
		n.p("- **warning:** %s\n", w)
	}
	n.ln("")
}

// notes lists notes and markers in time order.
func (n *nb) notes(evs []phases.Event, title string) {
	if len(evs) == 0 {
		return
	}
	if title != "" {
		n.p("### %s\n\n", title)
	}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case phases.Note:
			n.p("- %s **note**%s: %s\n", n.clock(ev.Time), paneTag(d.Pane), indentCont(d.Text))
		case phases.Marker:
			n.p("- %s **marker**%s: %s\n", n.clock(ev.Time), paneTag(d.Pane), indentCont(d.Label))
		}
	}
	n.ln("")
}

func paneTag(p string) string {
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// indentCont keeps a multi-line text inside its list item.
func indentCont(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func (n *nb) sessionLog(evs []phases.Event) {
	if len(evs) == 0 {
		return
	}
	n.ln("## Connection and errors\n")
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case phases.ConnState:
			s := fmt.Sprintf("- %s %s: %s", n.clock(ev.Time), d.Host, d.State)
			if d.RTTms > 0 {
				s += fmt.Sprintf(" (RTT %.1f ms)", d.RTTms)
			}
			if d.Err != "" {
				s += " — " + d.Err
			}
			if d.Retry > 0 {
				s += fmt.Sprintf(", retry in %.0f s", d.Retry)
			}
			n.ln(s)
		case phases.ErrorEvent:
			n.p("- %s **error** in %s: %s\n", n.clock(ev.Time), d.Where, d.Err)
		}
	}
	n.ln("")
}

// budgetBoth is the split from the isolated benchmarks beside the same step
// in the running engine (the torch profile window at this concurrency), and
// their difference.
func (n *nb) budgetBoth(b BudgetSplit) {
	e := b.Engine
	if b.HasTPOT {
		n.p("`%s` %s\n\n", TextBar(b.Parts(), 40), "█ all-reduce ▓ GEMM ░ rest (isolated benchmarks)")
	}
	cell := func(ok bool, v float64) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%.2f", v)
	}
	diff := func(ok bool, iso, eng float64) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%+.2f", eng-iso)
	}
	rest, hasRest := b.RestMs()
	n.ln("| part | isolated benchmarks ms | % of TPOT | in the engine (profile) ms | difference ms |")
	n.ln("|---|---:|---:|---:|---:|")
	n.p("| all-reduce (communication) | %s | %s | %.2f | %s |\n", cell(b.HasAR, b.AllReduceMs), pctCell(b, b.HasAR, b.AllReduceMs), e.CommMs, diff(b.HasAR, b.AllReduceMs, e.CommMs))
	n.p("| GEMM | %s | %s | %.2f | %s |\n", cell(b.HasGEMM, b.GEMMms), pctCell(b, b.HasGEMM, b.GEMMms), e.GEMMms, diff(b.HasGEMM, b.GEMMms, e.GEMMms))
	n.p("| rest | %s | %s | %.2f | %s |\n", cell(hasRest, rest), pctCell(b, hasRest, rest), e.RestMs(), diff(hasRest, rest, e.RestMs()))
	n.p("| · attention | — | | %.2f | |\n| · MoE | — | | %.2f | |\n| · other | — | | %.2f | |\n", e.AttentionMs, e.MoEms, e.OtherMs)
	n.p("| **TPOT** / device time per step | %s | %s | **%.2f** | %s |\n\n", cell(b.HasTPOT, b.TPOTms), pctCell(b, b.HasTPOT, b.TPOTms), e.StepMs, diff(b.HasTPOT, b.TPOTms, e.StepMs))
	if b.HasTPOT && e.StepMs < b.TPOTms {
		n.p("In the decode-only window the GPUs are busy %.2f ms per step, %.0f%% of the %.2f ms TPOT; a running request also waits for the host between steps and for the prefills of the requests that arrive while it decodes",
			e.StepMs, 100*e.StepMs/b.TPOTms, b.TPOTms)
		if b.Whole != nil {
			n.p(" (%s: the whole split below)", b.Whole.groupLine())
		}
		n.ln(".\n")
	}
}

func pctCell(b BudgetSplit, ok bool, v float64) string {
	if !ok || !b.HasTPOT {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", b.Pct(v))
}

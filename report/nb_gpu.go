package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/units"
)

func (n *nb) gpuEnv(e phases.GPUEnv) {
	s := fmt.Sprintf("Ran on %s, torch %s, CUDA %s", orUnknown(e.GPU), orUnknown(e.Torch), orUnknown(e.CUDA))
	if e.NProc > 0 {
		s += fmt.Sprintf(", %d processes", e.NProc)
	}
	n.ln(s + ".\n")
}

// servedEngines says how the weights served quantized were timed: with
// the engine's own kernels, or in BF16 and why (said only for a model
// with such weights).
func (n *nb) servedEngines(env *phases.GPUEnv, gemms []phases.GEMMResult) {
	if env == nil {
		return
	}
	experts, linear := false, false
	for _, g := range gemms {
		if g.Served == "" {
			continue
		}
		if strings.HasPrefix(g.Name, "experts.") {
			experts = true
		} else {
			linear = true
		}
	}
	if experts && env.EngineMoE != "" {
		n.p("Routed experts served quantized: %s.\n\n", mdCell(env.EngineMoE))
	}
	if linear && env.EngineLinear != "" {
		n.p("Other layers served quantized: %s.\n\n", mdCell(env.EngineLinear))
	}
}

func (n *nb) microRun(r *phaseRun) {
	var gemms []phases.GEMMResult
	var steps []phases.GEMMStep
	var env *phases.GPUEnv
	for _, ev := range r.events {
		switch d := ev.Data.(type) {
		case phases.GPUEnv:
			n.gpuEnv(d)
			env = &d
		case phases.GEMMResult:
			gemms = append(gemms, d)
		case phases.GEMMStep:
			steps = append(steps, d)
		case phases.Calib:
			n.calib(d)
		}
	}
	n.servedEngines(env, gemms)
	n.scriptErrors(r)
	if len(gemms) == 0 && len(steps) == 0 {
		n.ln("No GEMM timed.\n")
		return
	}
	if len(gemms) > 0 {
		sort.SliceStable(gemms, func(i, j int) bool { return stepOf(gemms[i]) < stepOf(gemms[j]) })
		n.ln("| GEMM | step M | M | N | K | dtype | per step | µs (p20–p80) | TFLOP/s | GB/s | BW % | µs per step |")
		n.ln("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
		shown, rest := topGEMMs(gemms, microRows)
		for _, g := range shown {
			name := g.Name
			if g.Batch > 1 {
				name += fmt.Sprintf(" ×%d", g.Batch)
			}
			dt := g.Dtype
			if g.Served != "" && !g.AsServed {
				dt += " (served " + g.Served + ")"
			} else if g.AsServed {
				dt += " (as served, the engine's kernel)"
			}
			us := fmt.Sprintf("%.1f", g.Us)
			if g.P20Us > 0 && g.P80Us > 0 {
				us += fmt.Sprintf(" (%.1f–%.1f)", g.P20Us, g.P80Us)
			}
			n.p("| %s | %d | %d | %d | %d | %s | %d | %s | %.1f | %.0f | %.0f%% | %.1f |\n",
				mdCell(name), stepOf(g), g.M, g.N, g.K, mdCell(dt), g.PerStep, us, g.TFLOPs, g.GBs, g.BWPct, g.StepUs)
		}
		n.restGEMMs(rest)
		n.ln("")
		if len(rest) > 0 {
			n.p("The %d GEMMs that take the most time per step, in step order; the journal holds all %d.\n\n", len(shown), len(gemms))
		}
	}
	if len(steps) > 0 {
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].M < steps[j].M })
		n.ln("Per decode step:\n")
		n.ln("| M | Σ GEMMs (ms) | back-to-back (ms) |")
		n.ln("|---:|---:|---:|")
		for _, s := range steps {
			b2b := "—"
			if s.BackToBackUs > 0 {
				b2b = fmt.Sprintf("%.3f", s.BackToBackUs/1000)
				if s.Graph {
					b2b += " (CUDA graph)"
				}
			}
			n.p("| %d | %.3f | %s |\n", s.M, s.SumUs/1000, b2b)
		}
		n.ln("")
	}
}

// stepOf is the decode batch a GEMM belongs to.
func stepOf(g phases.GEMMResult) int {
	if g.Step > 0 {
		return g.Step
	}
	return g.M
}

func (n *nb) calib(c phases.Calib) {
	s := fmt.Sprintf("Timing check on %s: %.1f µs, %.1f TFLOP/s", mdCell(c.Name), c.Us, c.TFLOPs)
	if c.PeakPct > 0 {
		s += fmt.Sprintf(" (%.0f%% of peak)", c.PeakPct)
	}
	switch {
	case c.DoBenchUs > 0:
		s += fmt.Sprintf("; triton do_bench %.1f µs", c.DoBenchUs)
		if p, ok := DeltaPct(c.DoBenchUs, c.Us); ok {
			s += fmt.Sprintf(" (%+.1f%%)", p)
		}
	case c.DoBenchError != "":
		s += "; triton do_bench failed: " + c.DoBenchError
	}
	n.ln(s + ".\n")
}

// scriptErrors lists what a benchmark script reported as failed.
func (n *nb) scriptErrors(r *phaseRun) {
	any := false
	for _, ev := range r.events {
		e, ok := ev.Data.(phases.ScriptError)
		if !ok {
			continue
		}
		any = true
		what, tail := e.Name, e.What // the GEMM leads, else what was done
		if what == "" {
			what, tail = tail, ""
		}
		if e.Step > 0 {
			what += fmt.Sprintf(" at step M=%d", e.Step)
		}
		what = strings.TrimSpace(what + " " + tail)
		lead := "**error**"
		if e.Fatal {
			lead = "**script stopped**"
		}
		n.p("- %s %s %s: %s\n", n.clock(ev.Time), lead, what, e.Err)
	}
	if any {
		n.ln("")
	}
}

func (n *nb) ncclRun(r *phaseRun) {
	var bursts []phases.NCCLBurst
	var a2a []phases.NCCLAllToAll
	var cliff *phases.NCCLCliff
	var none *phases.NCCLNone
	for _, ev := range r.events {
		switch d := ev.Data.(type) {
		case phases.NCCLNone:
			x := d
			none = &x
		case phases.GPUEnv:
			n.gpuEnv(d)
		case phases.NCCLBurst:
			bursts = append(bursts, d)
		case phases.NCCLAllToAll:
			a2a = append(a2a, d)
		case phases.NCCLCliff:
			c := d
			cliff = &c
		}
	}
	n.scriptErrors(r)
	n.ncclWarnings(r)
	if none != nil {
		n.ln("No collectives: " + none.Reason + ".\n")
	}
	if len(bursts) == 0 && len(a2a) == 0 {
		if none == nil {
			n.ln("No collective timed.\n")
		}
		return
	}
	if len(bursts) > 0 {
		n.bursts(bursts)
	}
	if len(a2a) > 0 && noEP(r.params) {
		n.ln(nccl.NoEPText(len(a2a)) + "\n")
		a2a = nil
	}
	if len(a2a) > 0 {
		n.allToAll(a2a, cliff)
	}
}

// ncclWarnings lists the figures the NCCL script left out, and why.
func (n *nb) ncclWarnings(r *phaseRun) {
	any := false
	for _, ev := range r.events {
		if w, ok := ev.Data.(phases.NCCLWarning); ok {
			n.p("- %s **warning** %s\n", n.clock(ev.Time), w.Text)
			any = true
		}
	}
	if any {
		n.ln("")
	}
}

// bursts is the table of the all-reduce burst of one decode step, per M.
func (n *nb) bursts(bursts []phases.NCCLBurst) {
	n.ln("All-reduce burst of one decode step:\n")
	n.ln("| M | all-reduces | bytes each | total ms | µs each | CUDA graph ms | graph µs each | between GEMMs ms | ranks |")
	n.ln("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, b := range bursts {
		g, gp, in := nccl.GraphCells(b, "—")
		n.p("| %d | %d | %s | %.3f | %.1f | %s | %s | %s | %d |\n", b.M, b.Count, units.Bytes(b.Bytes), b.TotalMs, b.PerOpUs, g, gp, in, b.NProc)
	}
	n.ln("")
	note := "Between GEMMs: each all-reduce after a GEMM that evicts L2, in a CUDA graph, less the GEMMs alone, the figure the budget uses"
	if slices.ContainsFunc(bursts, func(b phases.NCCLBurst) bool { return b.InStepMs <= 0 }) {
		note += "; where it is —, the budget takes the CUDA graph time, else the eager one (the run's warnings and errors, above, say why it is missing)"
	}
	n.ln(note + ".\n")
}

// allToAll is the All-to-All table per size (with the bytes off node on
// several nodes), the cliff marked, and the cliff's line.
func (n *nb) allToAll(a2a []phases.NCCLAllToAll, cliff *phases.NCCLCliff) {
	n.ln("All-to-All:\n")
	nodes := a2a[len(a2a)-1].Nodes > 1
	if nodes {
		n.ln("| tokens/GPU | bytes | off node | µs | algbw GB/s | busbw GB/s | |")
		n.ln("|---:|---:|---:|---:|---:|---:|---|")
	} else {
		n.ln("| tokens/GPU | bytes | µs | algbw GB/s | busbw GB/s | |")
		n.ln("|---:|---:|---:|---:|---:|---|")
	}
	for _, a := range a2a {
		mark := ""
		if cliff != nil && a.Tokens == cliff.Tokens {
			mark = "**cliff**"
		}
		off := ""
		if nodes {
			off = " " + units.Bytes(a.OffNodeBytes) + " |"
		}
		n.p("| %d | %s |%s %.1f | %.2f | %.2f | %s |\n", a.Tokens, units.Bytes(a.Bytes), off, a.Us, a.AlgBW, a.BusBW, mark)
	}
	n.ln("")
	if t := nccl.OffNodeText(a2a); t != "" {
		n.ln(strings.ToUpper(t[:1]) + t[1:] + ".\n")
	}
	if cliff != nil {
		ratio := 0.0
		if cliff.FromUs > 0 {
			ratio = cliff.ToUs / cliff.FromUs
		}
		n.p("**Cliff:** at %d tokens per GPU latency grows %.1f× (%.1f → %.1f µs).\n\n", cliff.Tokens, ratio, cliff.FromUs, cliff.ToUs)
	} else {
		n.ln("No cliff: All-to-All latency never more than doubled between sizes.\n")
	}
}

// microRows is how many GEMMs the notebook's table lists one by one.
const microRows = 15

// topGEMMs are the n GEMMs with the most time per step, in their order in
// gemms, and the others.
func topGEMMs(gemms []phases.GEMMResult, n int) (top, rest []phases.GEMMResult) {
	if len(gemms) <= n+1 {
		return gemms, nil
	}
	idx := make([]int, len(gemms))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return gemms[idx[a]].StepUs > gemms[idx[b]].StepUs })
	keep := map[int]bool{}
	for _, i := range idx[:n] {
		keep[i] = true
	}
	for i, g := range gemms {
		if keep[i] {
			top = append(top, g)
		} else {
			rest = append(rest, g)
		}
	}
	return top, rest
}

// restGEMMs sums the GEMMs left out of the table, one row per step M (a
// sum across batch sizes would add different steps).
func (n *nb) restGEMMs(rest []phases.GEMMResult) {
	var ms []int
	count, sum := map[int]int{}, map[int]float64{}
	for _, g := range rest {
		m := stepOf(g)
		if count[m] == 0 {
			ms = append(ms, m)
		}
		count[m]++
		sum[m] += g.StepUs
	}
	for _, m := range ms {
		n.p("| _%d more GEMMs, summed_ | %d | | | | | | | | | | %.1f |\n", count[m], m, sum[m])
	}
}

// noEP is true when the run's parameters say expert parallelism was off
// (a journal from before they said is taken as on).
func noEP(params any) bool {
	m, ok := params.(map[string]any)
	if !ok {
		return false
	}
	ep, ok := m["ep"].(bool)
	return ok && !ep
}

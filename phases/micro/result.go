package micro

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
)

// Result is everything one micro run reported, gathered from its events.
type Result struct {
	Env    *phases.GPUEnv       `json:"env,omitempty"`
	Calib  *phases.Calib        `json:"calib,omitempty"`
	GEMMs  []phases.GEMMResult  `json:"gemms"`
	Steps  []phases.GEMMStep    `json:"steps"`
	Errors []phases.ScriptError `json:"errors,omitempty"`
	// Progress is the latest progress line (not kept in the journal).
	Progress phases.Progress `json:"-"`
}

// Add folds one event into the result; events of other kinds are ignored.
func (r *Result) Add(ev phases.Event) {
	switch d := ev.Data.(type) {
	case phases.GPUEnv:
		if ev.Kind == phases.KindMicroEnv {
			r.Env = &d
		}
	case phases.Calib:
		r.Calib = &d
	case phases.GEMMResult:
		r.GEMMs = append(r.GEMMs, d)
	case phases.GEMMStep:
		r.Steps = append(r.Steps, d)
	case phases.ScriptError:
		if ev.Kind == phases.KindMicroError {
			r.Errors = append(r.Errors, d)
		}
	case phases.Progress:
		if ev.Kind == phases.KindMicroProgress {
			r.Progress = d
		}
	}
}

// Empty reports whether the run gave no result at all: no GEMM, no step
// (a Python that ran nothing, such as `true`).
func (r *Result) Empty() bool { return len(r.GEMMs) == 0 && len(r.Steps) == 0 }

// Ms lists the batch sizes with results, ascending.
func (r *Result) Ms() []int {
	seen := map[int]bool{}
	var out []int
	for _, g := range r.GEMMs {
		if !seen[stepOf(g)] {
			seen[stepOf(g)] = true
			out = append(out, stepOf(g))
		}
	}
	sort.Ints(out)
	return out
}

func stepOf(g phases.GEMMResult) int {
	if g.Step > 0 {
		return g.Step
	}
	return g.M
}

// Sort orders of the GEMM table.
const (
	ByStepTime  = iota // per-step time, largest contributors first
	ByTime             // one call's time, slowest first
	ByBandwidth        // % of memory bandwidth, lowest first
	ByPlan             // step order, as planned
	numOrders
)

// OrderNames name the sort orders, for help and headers.
var OrderNames = [numOrders]string{"step time", "call time", "% bandwidth", "plan order"}

// NextOrder cycles through the sort orders.
func NextOrder(o int) int { return (o + 1) % numOrders }

// Rows returns the GEMMs of batch size m in the given order.
func (r *Result) Rows(m, order int) []phases.GEMMResult {
	var rows []phases.GEMMResult
	for _, g := range r.GEMMs {
		if stepOf(g) == m {
			rows = append(rows, g)
		}
	}
	switch order {
	case ByStepTime:
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].StepUs > rows[j].StepUs })
	case ByTime:
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Us > rows[j].Us })
	case ByBandwidth:
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].BWPct < rows[j].BWPct })
	}
	return rows
}

// StepSum is Σ step_us of the GEMMs of batch size m that have results.
func (r *Result) StepSum(m int) float64 {
	s := 0.0
	for _, g := range r.GEMMs {
		if stepOf(g) == m {
			s += g.StepUs
		}
	}
	return s
}

// Step returns the back-to-back measurement of batch size m, if any.
func (r *Result) Step(m int) (phases.GEMMStep, bool) {
	for _, s := range r.Steps {
		if s.M == m {
			return s, true
		}
	}
	return phases.GEMMStep{}, false
}

// Name is the GEMM's name, starred when the server runs it in another dtype
// than the BF16 it was timed in.
func Name(g phases.GEMMResult) string {
	if g.Served != "" && !g.AsServed {
		return g.Name + "*"
	}
	return g.Name
}

// Share is the GEMM's percentage of a step whose GEMMs sum to sum µs.
func Share(g phases.GEMMResult, sum float64) float64 {
	if sum > 0 {
		return 100 * g.StepUs / sum
	}
	return 0
}

// Shape formats a GEMM as M×N×K, with the batch count for batched GEMMs.
func Shape(g phases.GEMMResult) string {
	s := fmt.Sprintf("%d×%d×%d", g.M, g.N, g.K)
	if g.Batch > 1 {
		s = fmt.Sprintf("%d·(%s)", g.Batch, s)
	}
	return s
}

// WriteTables writes the result as plain-text tables: per batch size the
// GEMMs ordered by their share of the step, then the step totals.
func (r *Result) WriteTables(w io.Writer) {
	if r.Env != nil {
		fmt.Fprintf(w, "GPU %s (torch %s, CUDA %s); peak %.0f GB/s, %.0f TFLOP/s (datasheet); copy measured %.0f GB/s\n",
			r.Env.GPU, r.Env.Torch, r.Env.CUDA, r.Env.PeakGBs, r.Env.PeakTFLOPs, r.Env.CopyGBs)
		if slices.ContainsFunc(r.GEMMs, func(g phases.GEMMResult) bool { return g.Served != "" || g.AsServed }) {
			for _, l := range [][2]string{{"routed experts", r.Env.EngineMoE}, {"quantized linear layers", r.Env.EngineLinear}} {
				if l[1] != "" {
					fmt.Fprintf(w, "%s: %s\n", l[0], l[1])
				}
			}
		}
	}
	if c := r.Calib; c != nil {
		fmt.Fprintf(w, "check: %s: %.0f TFLOP/s (%.1f µs)", c.Name, c.TFLOPs, c.Us)
		if c.DoBenchTFLOPs > 0 {
			fmt.Fprintf(w, "; triton do_bench %.0f TFLOP/s (%.1f µs), %+.1f%%", c.DoBenchTFLOPs, c.DoBenchUs, 100*(c.TFLOPs/c.DoBenchTFLOPs-1))
		} else if c.DoBenchError != "" {
			fmt.Fprintf(w, "; do_bench unavailable: %s", c.DoBenchError)
		}
		fmt.Fprintln(w)
	}
	for _, m := range r.Ms() {
		sum := r.StepSum(m)
		fmt.Fprintf(w, "\nM=%d\n", m)
		fmt.Fprintf(w, "%-15s %-22s %5s %9s %8s %7s %5s %10s %6s\n", "GEMM", "shape M×N×K", "/step", "µs", "TFLOP/s", "GB/s", "%BW", "step µs", "share")
		for _, g := range r.Rows(m, ByStepTime) {
			fmt.Fprintf(w, "%-15s %-22s %5d %9.1f %8.2f %7.0f %5.1f %10.1f %5.1f%%\n",
				Name(g), Shape(g), g.PerStep, g.Us, g.TFLOPs, g.GBs, g.BWPct, g.StepUs, Share(g, sum))
		}
	}
	fmt.Fprintf(w, "\n%-6s %14s %16s\n", "M", "Σ GEMMs ms", "back-to-back ms")
	for _, m := range r.Ms() {
		b2b := "-"
		if s, ok := r.Step(m); ok && s.BackToBackUs > 0 {
			b2b = fmt.Sprintf("%.3f", s.BackToBackUs/1e3)
			if s.Graph {
				b2b += " (graph)"
			}
		}
		fmt.Fprintf(w, "%-6d %14.3f %16s\n", m, r.StepSum(m)/1e3, b2b)
	}
	if r.hasServed() {
		fmt.Fprintln(w, "\n* served quantized, timed in BF16: an upper bound")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", ErrorText(e))
	}
}

// hasServed: some GEMM served quantized was timed in BF16 (an upper bound).
func (r *Result) hasServed() bool {
	return slices.ContainsFunc(r.GEMMs, func(g phases.GEMMResult) bool { return g.Served != "" && !g.AsServed })
}

// ErrorText formats a script error for one line of output.
func ErrorText(e phases.ScriptError) string {
	var parts []string
	if e.Name != "" {
		parts = append(parts, e.Name)
	}
	if e.What != "" {
		parts = append(parts, e.What)
	}
	if e.Step > 0 {
		parts = append(parts, fmt.Sprintf("M=%d", e.Step))
	}
	s := strings.Join(parts, " ")
	if s != "" {
		s += ": "
	}
	return s + e.Err
}

// Report is what `profdeck micro --json` writes.
type Report struct {
	Host   string     `json:"host"`
	Python string     `json:"python"`
	Plan   model.Plan `json:"plan"`
	Result
	Error string `json:"error,omitempty"`
}

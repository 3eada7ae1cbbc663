package report

import (
	"fmt"
	"math"
	"sort"
)

// stepParts are a decode step's parts at one batch, in ms: communication,
// GEMM, attention, the other kernels and the host's gaps.
type stepParts struct {
	Comm, GEMM, Attn, Other, Host float64
}

func (s stepParts) sum() float64 { return s.Comm + s.GEMM + s.Attn + s.Other + s.Host }

// device is the step's kernels without communication or the host.
func (s stepParts) device() float64 { return s.GEMM + s.Attn + s.Other }

func partsOf(f BudgetFigures) stepParts {
	return stepParts{Comm: f.CommMs, GEMM: f.GEMMms, Attn: f.AttnMs, Other: f.OtherMs, Host: f.HostMs}
}

// complete are the budget's splits whose decode step is whole, by C.
func (b BaselineFigures) complete() []BudgetFigures {
	return b.splitsWhere(func(f BudgetFigures) bool { return f.Complete })
}

// splits are the budget's splits with at least the GEMM part (whole or
// partial), by C.
func (b BaselineFigures) splits() []BudgetFigures {
	return b.splitsWhere(func(f BudgetFigures) bool { return f.Complete || f.Partial })
}

func (b BaselineFigures) splitsWhere(keep func(BudgetFigures) bool) []BudgetFigures {
	var out []BudgetFigures
	for _, f := range b.Budgets {
		if keep(f) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].C < out[j].C })
	return out
}

// partial reports whether the splits leave the step's rest unsplit.
func (b BaselineFigures) partial() bool {
	s := b.splits()
	return len(s) > 0 && len(b.complete()) < len(s)
}

// around are the two split levels a batch lies between (or the two
// nearest, beyond the ends); one when only one was split.
func around(levels []BudgetFigures, batch float64) (lo, hi BudgetFigures) {
	lo, hi = levels[0], levels[len(levels)-1]
	if len(levels) == 1 {
		return lo, lo
	}
	i := sort.Search(len(levels), func(i int) bool { return float64(levels[i].C) >= batch })
	switch {
	case i == 0:
		return levels[0], levels[1]
	case i >= len(levels):
		return levels[len(levels)-2], levels[len(levels)-1]
	}
	return levels[i-1], levels[i]
}

// lerp is y at x on the line through (x0, y0) and (x1, y1), never below 0.
func lerp(x, x0, y0, x1, y1 float64) float64 {
	if x1 == x0 {
		return y0
	}
	return max(0, y0+(y1-y0)*(x-x0)/(x1-x0))
}

// stepAt is the decode step's parts at a batch: the budget's own split
// where it split that C; else GEMM from the nearest split level scaled by
// micro's step sums at the two M (or, without micro at both, linear in M
// between the split levels: the weight-read-bound regime, where a step
// reads the weights once whatever its M), communication likewise by the
// NCCL bursts, attention, the other kernels and the host's gaps linear in
// the batch between the split levels. How is said in the text; ok false
// when the budget split no decode step.
func (b BaselineFigures) stepAt(batch float64) (stepParts, string, bool) {
	levels := b.splits()
	if len(levels) == 0 {
		return stepParts{}, "", false
	}
	for _, f := range levels {
		if math.Abs(float64(f.C)-batch) < 0.5 {
			return partsOf(f), fmt.Sprintf("the budget's split at C=%d", f.C), true
		}
	}
	lo, hi := around(levels, batch)
	x0, x1 := float64(lo.C), float64(hi.C)
	s := stepParts{Attn: lerp(batch, x0, lo.AttnMs, x1, hi.AttnMs), Other: lerp(batch, x0, lo.OtherMs, x1, hi.OtherMs),
		Host: lerp(batch, x0, lo.HostMs, x1, hi.HostMs)}
	text := fmt.Sprintf("attention, other kernels and host gaps linear in the batch between the budget's splits at C=%d and C=%d", lo.C, hi.C)
	ref := nearest(levels, batch)
	if g, ok := b.microAt(batch); ok {
		if g0, ok0 := b.microAt(float64(ref.C)); ok0 && g0 > 0 {
			s.GEMM = ref.GEMMms * g / g0
			text = fmt.Sprintf("GEMM %.2f ms at C=%d × micro's %.2f/%.2f ms (M=%.0f against M=%d); ", ref.GEMMms, ref.C, g, g0, batch, ref.C) + text
		}
	}
	if s.GEMM == 0 {
		s.GEMM = lerp(batch, x0, lo.GEMMms, x1, hi.GEMMms)
		text = fmt.Sprintf("GEMM linear in M between C=%d and C=%d (no micro figure at M=%.0f: the weight-read-bound regime); ", lo.C, hi.C, batch) + text
	}
	s.Comm, text = b.commAt(batch, ref, lo, hi, text)
	return s, text, true
}

// commAt is the communication at a batch: the nearest split's scaled by
// the NCCL bursts at the two M where both were timed, else linear.
func (b BaselineFigures) commAt(batch float64, ref, lo, hi BudgetFigures, text string) (float64, string) {
	if ref.CommMs == 0 && lo.CommMs == 0 && hi.CommMs == 0 {
		return 0, text
	}
	a, ok := b.allReduceAt(batch)
	a0, ok0 := b.allReduceAt(float64(ref.C))
	if ok && ok0 && a0 > 0 {
		return ref.CommMs * a / a0, text + fmt.Sprintf("; communication %.2f ms at C=%d × the NCCL bursts' %.2f/%.2f ms", ref.CommMs, ref.C, a, a0)
	}
	return lerp(batch, float64(lo.C), lo.CommMs, float64(hi.C), hi.CommMs), text + "; communication linear in the batch (no NCCL burst at that M)"
}

// nearest is the split level nearest the batch on a log scale.
func nearest(levels []BudgetFigures, batch float64) BudgetFigures {
	best, bestD := levels[0], math.Inf(1)
	for _, f := range levels {
		if d := math.Abs(math.Log(float64(f.C) / max(batch, 1))); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// microAt is micro's per-step GEMM sum at M, at a timed M or linear
// between the two around it; ok false outside the timed range.
func (b BaselineFigures) microAt(m float64) (float64, bool) {
	return interpAt(b.MicroGEMMms, m)
}

// allReduceAt is the NCCL bursts' time per step at M, as microAt.
func (b BaselineFigures) allReduceAt(m float64) (float64, bool) {
	pts := map[int]float64{}
	for _, f := range b.AllReduce {
		pts[f.M] = f.StepMs
	}
	return interpAt(pts, m)
}

// interpAt reads a table of figures by integer size at x: exact, or linear
// between the two sizes around it; ok false outside them.
func interpAt(pts map[int]float64, x float64) (float64, bool) {
	keys := make([]int, 0, len(pts))
	for k := range pts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for i, k := range keys {
		if math.Abs(float64(k)-x) < 1e-9 {
			return pts[k], true
		}
		if float64(k) > x && i > 0 {
			a := keys[i-1]
			return lerp(x, float64(a), pts[a], float64(k), pts[k]), true
		}
	}
	return 0, false
}

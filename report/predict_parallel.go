package report

import (
	"fmt"
	"sort"
	"strings"
)

// tpOf is the tensor-parallel size a launch sets (the baseline's run
// when it says none, else 1).
func (pr *predictor) tpOf(f launchFlags) float64 {
	if t := flagFloat(f, "tensor-parallel-size"); t >= 1 {
		return t
	}
	if _, ok := f["tensor-parallel-size"]; !ok && pr.b.TP > 0 {
		return float64(pr.b.TP)
	}
	return 1
}

// tensorParallel is the model of another --tensor-parallel-size: the
// communication part rescaled for the new size (the NCCL figures at that
// size where measured, else a ring all-reduce at the bus bandwidth
// measured: each GPU moves 2(n−1)/n of the data), GEMM and attention per
// GPU × old/new TP (weights and heads split), the other kernels and the
// host's gaps as they were, the prefills as the step; GPUs × new/old.
func (pr *predictor) tensorParallel() {
	t, t2 := pr.tpOf(pr.base), pr.tpOf(pr.next)
	if t == t2 {
		return
	}
	pr.gpus *= t2 / t
	if !pr.needSplit("tensor parallelism") {
		return
	}
	if pr.b.partial() {
		pr.warn("tensor parallelism: attention, the other kernels and the host's gaps are not split apart in the baseline: kept as measured")
	}
	comm, how, ok := pr.commFactor(t, t2)
	if !ok {
		pr.cantTPOT(how)
		return
	}
	pr.each(func(p *point) {
		old := p.parts.sum()
		p.parts.Comm = comm(p)
		p.parts.GEMM *= t / t2
		p.parts.Attn *= t / t2
		if old > 0 {
			p.prefill *= p.parts.sum() / old
			p.ttft *= p.parts.sum() / old
		}
	})
	pr.line("--tensor-parallel-size %.0f → %.0f: GEMM and attention per GPU × %.0f/%.0f (weights and heads split), %s, the other kernels and host gaps as measured, the prefills as the step; GPUs × %.0f/%.0f",
		t, t2, t, t2, how, t2, t)
	pr.warn("tensor parallelism: the KV cache per replica grows with the GPUs; the seats are kept as the baseline's")
}

// commFactor is how the communication at the new TP is had.
func (pr *predictor) commFactor(t, t2 float64) (func(p *point) float64, string, bool) {
	if t2 == 1 {
		return func(*point) float64 { return 0 }, "no communication at TP 1", true
	}
	if at := pr.allReduceFor(int(t2)); len(at) > 0 {
		return func(p *point) float64 { v, _ := interpAt(at, p.batch); return v },
			fmt.Sprintf("communication the NCCL bursts at %.0f GPUs, at M = the batch", t2), true
	}
	if t == 1 {
		return nil, fmt.Sprintf("communication at TP %.0f: the baseline at TP 1 has no collectives to rescale (time the NCCL phase with nproc %.0f)", t2, t2), false
	}
	f := ((t2 - 1) / t2) / ((t - 1) / t)
	bw := pr.meanBusBW()
	return func(p *point) float64 { return p.parts.Comm * f },
		fmt.Sprintf("communication × %.2f (a ring all-reduce at the bus bandwidth measured, %.0f GB/s: each GPU moves 2(n−1)/n of the data)", f, bw), true
}

// allReduceFor are the all-reduce bursts timed at n GPUs, ms by M.
func (pr *predictor) allReduceFor(n int) map[int]float64 {
	out := map[int]float64{}
	for _, f := range pr.b.AllReduce {
		if f.NProc == n {
			out[f.M] = f.StepMs
		}
	}
	return out
}

func (pr *predictor) meanBusBW() float64 {
	s, n := 0.0, 0
	for _, f := range pr.b.AllReduce {
		if f.BusBWGBs > 0 {
			s += f.BusBWGBs
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// dataParallel is the model of another --data-parallel-size: replicas,
// each serving its share of the clients as the baseline did: throughput
// and the plateau's clients × new/old, TPOT unchanged, GPUs × new/old.
func (pr *predictor) dataParallel() {
	d, d2 := max(flagFloat(pr.base, "data-parallel-size"), 1), max(flagFloat(pr.next, "data-parallel-size"), 1)
	r := d2 / d
	pr.gpus *= r
	pr.each(func(p *point) { p.replicas *= r })
	pr.dp = r
	pr.line("--data-parallel-size %.0f → %.0f: %.0f replicas, each with the baseline's share of the clients: throughput and the plateau's C × %.2f, TPOT unchanged, GPUs × %.2f", d, d2, d2, r, r)
}

// expertParallel is the model of --enable-expert-parallel: the experts'
// all-reduce moved into All-to-All. Half a step's all-reduces follow the
// MoE (one after attention, one after the experts, each layer); EP
// replaces those with a dispatch and a combine All-to-All of the batch's
// tokens split over the GPUs, at the NCCL phase's All-to-All times.
func (pr *predictor) expertParallel() {
	on, _ := flagOn(pr.next, "enable-expert-parallel")
	if _, off := pr.next["no-enable-expert-parallel"]; off || !on {
		pr.cannot = append(pr.cannot, "expert parallelism turned off: not modelled")
		return
	}
	gpus := pr.tpOf(pr.next) * max(flagFloat(pr.next, "data-parallel-size"), 1)
	if gpus <= 1 {
		pr.line("--enable-expert-parallel on one GPU: no experts to spread, no change")
		return
	}
	if !pr.needSplit("expert parallelism") {
		return
	}
	count := pr.allReduceCount()
	if count == 0 || len(pr.b.AllToAll) == 0 {
		pr.cantTPOT("expert parallelism: the NCCL phase timed no all-reduce burst or no All-to-All to move the experts' all-reduce into (run the nccl step)")
		return
	}
	pr.each(func(p *point) {
		a2a := pr.allToAllAt(p.batch / gpus)
		p.parts.Comm = p.parts.Comm/2 + float64(count)/2*2*a2a/1000
	})
	pr.line("--enable-expert-parallel: communication = half the all-reduce burst (after attention) + %d MoE layers × a dispatch and a combine All-to-All of batch/%.0f tokens per GPU (the NCCL phase's All-to-All, e.g. %.0f µs at %d tokens)",
		count/2, gpus, pr.b.AllToAll[0].Us, pr.b.AllToAll[0].Tokens)
	pr.warn("expert parallelism: each GPU holds 1/%.0f of the experts whole instead of a slice of each: the GEMM time per GPU is kept; routing skew is not modelled", gpus)
}

// allReduceCount is the all-reduces per decode step the NCCL phase timed.
func (pr *predictor) allReduceCount() int {
	for _, f := range pr.b.AllReduce {
		if f.Count > 0 {
			return f.Count
		}
	}
	return 0
}

// allToAllAt is one All-to-All's µs at tokens per GPU: linear between the
// sizes timed, the smallest's below them (latency), ∝ tokens above.
func (pr *predictor) allToAllAt(tokens float64) float64 {
	a := pr.b.AllToAll
	sort.Slice(a, func(i, j int) bool { return a[i].Tokens < a[j].Tokens })
	if tokens <= float64(a[0].Tokens) {
		return a[0].Us
	}
	last := a[len(a)-1]
	if tokens >= float64(last.Tokens) {
		return last.Us * tokens / float64(last.Tokens)
	}
	pts := map[int]float64{}
	for _, f := range a {
		pts[f.Tokens] = f.Us
	}
	v, _ := interpAt(pts, tokens)
	return v
}

// flagOn reads a flag set without a value, or with true or 1.
func flagOn(f launchFlags, name string) (on, set bool) {
	v, ok := f[name]
	if !ok {
		return false, false
	}
	v = strings.ToLower(v)
	return v == "" || v == "true" || v == "1", true
}

package report

import "fmt"

// chunked is the model of chunked prefill and its token budget
// (--enable-chunked-prefill, --no-enable-chunked-prefill, the rig's
// --chunked-prefill, --max-num-batched-tokens): the prefill part of the
// budget redistributed. Chunked, the prompts ride inside the decode steps:
// a prompt token costs the step's marginal time per token (micro's GEMM
// from M = batch to batch + the prompt tokens a step carries, scaled to
// the engine's GEMM, and the per-token slope of the other kernels,
// attention and the host's gaps over the budget's splits) instead of a
// share of a whole prefill step of its own. Whole prefills cost their own
// step at M = the prompt's length, over its tokens. The prompt tokens a
// running request waits for per output token stay as measured; the mean
// TTFT (prefills queued) moves with the cost of a prompt token.
func (pr *predictor) chunked() {
	on, set := chunkedMode(pr.next)
	if _, baseSet := chunkedMode(pr.base); !set && baseSet {
		on, set = false, true // the flag dropped
	}
	if !set {
		on = pr.plat.mixed // only the token budget changed: the mode measured
	}
	chunk := flagFloat(pr.next, "max-num-batched-tokens")
	p := pr.plat
	if len(pr.b.complete()) == 0 || p.promptPerToken <= 0 {
		pr.cantTPOT("chunked prefill: a prompt token's cost needs the budget's whole split of the decode step and the prompt tokens the sweep's requests waited for (run the micro and profile steps, and a sweep that measures its prefill wait)")
		return
	}
	if !on && !p.mixed {
		pr.line("--max-num-batched-tokens with whole prefills (measured so in the baseline): each prefill its own step as before, the prefill part unchanged to first order")
		return
	}
	before := p.prefill
	cost, text := pr.promptCost(p, on, chunk)
	pr.each(func(q *point) { pr.rechunk(q, on, chunk) })
	mode := "whole prefills, a step of their own"
	if on {
		mode = "chunked, inside the decode steps"
	}
	pr.line("prefill %s: a prompt token %s = %.4f ms against %.4f ms measured (%s); at the plateau %.0f prompt tokens per output token: prefills %.2f → %.2f ms per output token, mean TTFT × %.2f",
		mode, text, cost, perPrompt(p), measuredMode(p.mixed), p.promptPerToken, before, pr.plat.prefill, pr.plat.ttft)
	pr.warn("chunked prefill: the prompt tokens a running request waits for are the baseline's; the TTFT is scaled with a prompt token's cost, not modelled step by step")
}

func measuredMode(mixed bool) string {
	if mixed {
		return "chunked in the baseline"
	}
	return "whole prefills in the baseline"
}

// rechunk sets a point's prefills under the mode: a prompt token's new
// cost × the prompt tokens waited for per output token.
func (pr *predictor) rechunk(p *point, on bool, chunk float64) {
	if p.promptPerToken <= 0 || p.prefill <= 0 {
		return
	}
	old := p.prefill / p.promptPerToken
	cost, _ := pr.promptCost(*p, on, chunk)
	switch {
	case on && p.mixed && chunk > 0:
		// The same mode with another token budget: the marginal cost at
		// the new chunk against the one measured.
		was, _ := pr.promptCost(*p, true, flagFloat(pr.base, "max-num-batched-tokens"))
		if was <= 0 {
			return
		}
		cost = old * cost / was
	case on == p.mixed:
		return // whole prefills stay whole; chunked without a new budget stays
	}
	if cost <= 0 {
		return
	}
	p.prefill, p.ttft, p.mixed = p.promptPerToken*cost, p.ttft*cost/old, on
}

// promptCost is a prompt token's time under the mode, and how.
func (pr *predictor) promptCost(p point, on bool, chunk float64) (float64, string) {
	if !on {
		l := pr.b.PromptLen
		if l < 1 {
			return 0, "(no prompt length measured)"
		}
		s, _, _ := pr.b.stepAt(l)
		return s.sum() / l, fmt.Sprintf("costs a whole prefill step at M=%.0f, %.2f ms, over its tokens", l, s.sum())
	}
	pp := p.promptPerStep
	if chunk > 0 {
		pp = min(pp, max(chunk-p.batch, 1))
	}
	slope, from := pr.slopes()
	if pp <= 0 {
		return slope, fmt.Sprintf("costs the slope per token of %s", from)
	}
	g0, ok0 := pr.b.microAt(p.batch)
	g1, ok1 := pr.b.microAt(p.batch + pp)
	if ok0 && ok1 && g0 > 0 {
		g := (g1 - g0) * p.parts.GEMM / g0 / pp
		return g + slope, fmt.Sprintf("costs its marginal GEMM (micro M=%.0f → %.0f: %.2f → %.2f ms, × %.2f/%.2f ms the engine's GEMM at the batch, over %.0f prompt tokens a step) %.4f ms + the slope per token of %s %.4f ms",
			p.batch, p.batch+pp, g0, g1, p.parts.GEMM, g0, pp, g, from, slope)
	}
	gs := pr.gemmSlope()
	return gs + slope, fmt.Sprintf("costs the GEMM's slope per token over the budget's splits %.4f ms (micro timed no M=%.0f) + the slope per token of %s %.4f ms", gs, p.batch+pp, from, slope)
}

// slopes are the per-token slope of the other kernels, attention and the
// host's gaps between the budget's first and last split.
func (pr *predictor) slopes() (float64, string) {
	lv := pr.b.complete()
	if len(lv) < 2 {
		return 0, "the other kernels (one split only: none)"
	}
	a, z := lv[0], lv[len(lv)-1]
	d := float64(z.C - a.C)
	s := max(0, (z.OtherMs-a.OtherMs)/d) + max(0, (z.AttnMs-a.AttnMs)/d) + max(0, (z.HostMs-a.HostMs)/d)
	return s, fmt.Sprintf("the other kernels, attention and host gaps (C=%d → %d)", a.C, z.C)
}

// gemmSlope is the GEMM's slope per token between the first and last split.
func (pr *predictor) gemmSlope() float64 {
	lv := pr.b.complete()
	if len(lv) < 2 {
		return 0
	}
	a, z := lv[0], lv[len(lv)-1]
	return max(0, (z.GEMMms-a.GEMMms)/float64(z.C-a.C))
}

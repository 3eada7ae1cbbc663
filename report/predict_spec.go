package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// draftCosts are what drafting adds to a decode step, as a fraction of
// it, by --speculative-config method: a rule of thumb (an n-gram lookup
// on the host; one draft layer for EAGLE; the model's own MTP layer),
// said as such; other methods (a draft model) draftCostOther.
var draftCosts = map[string]float64{"ngram": 0.02, "suffix": 0.02, "eagle": 0.10, "eagle3": 0.10, "mtp": 0.08, "deepseek_mtp": 0.08}

const draftCostOther = 0.15

// specConf is what a --speculative-config says: its method, the draft
// tokens per step, and an acceptance rate per draft token when given.
type specConf struct {
	Method string
	K      int
	Accept float64 // 0: not given
}

// parseSpec reads a --speculative-config JSON value.
func parseSpec(v string) (specConf, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(v), &m) != nil {
		return specConf{}, false
	}
	var sc specConf
	sc.Method, _ = m["method"].(string)
	if model, _ := m["model"].(string); sc.Method == "" && model != "" {
		sc.Method = "draft_model"
	}
	if k, ok := m["num_speculative_tokens"].(float64); ok && k >= 1 && k <= 64 {
		sc.K = int(k)
	}
	for _, key := range []string{"acceptance_rate", "accept_rate"} {
		if a, ok := m[key].(float64); ok && a > 0 && a <= 1 {
			sc.Accept = a
		}
	}
	return sc, sc.K > 0
}

// acceptLength is the mean accepted length, the bonus token included, of
// k drafts each accepted with probability a until the first rejected:
// (1 − a^(k+1)) / (1 − a).
func acceptLength(a float64, k int) float64 {
	if a >= 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(a, float64(k+1))) / (1 - a)
}

// acceptRate is the per-draft acceptance that gives mean length l at k
// drafts (bisection; l is clamped to [1, k+1]).
func acceptRate(l float64, k int) float64 {
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if acceptLength(mid, k) < l {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

func draftCost(method string) float64 {
	if f, ok := draftCosts[strings.ToLower(method)]; ok {
		return f
	}
	return draftCostOther
}

// speculative is the model of --speculative-config: the decode step ×
// (1 + draft cost) / mean accepted length, its GEMM at M = batch × (k+1)
// (the verification step holds k+1 tokens a request) from micro where it
// timed that M; the prefills as measured. The acceptance is the
// baseline's spec-decode metrics where measured, else the variant's
// acceptance_rate; without either the TPOT is not predicted.
func (pr *predictor) speculative() {
	v, ok := pr.next["speculative-config"]
	if !ok {
		pr.cannot = append(pr.cannot, "speculative decoding turned off: not modelled")
		return
	}
	sc, ok := parseSpec(v)
	if !ok {
		pr.cannot = append(pr.cannot, fmt.Sprintf("--speculative-config %.80q: no num_speculative_tokens read", v))
		return
	}
	l, from := pr.acceptance(sc)
	if l <= 0 {
		pr.cantTPOT("speculative decoding: no acceptance measured in the baseline (its spec-decode metrics) and none given in the variant's --speculative-config (acceptance_rate)")
		return
	}
	f := (1 + draftCost(sc.Method)) / l
	base, hadBase := parseSpec(pr.base["speculative-config"])
	k0 := 0
	if hadBase {
		if pr.b.SpecAcceptLength <= 0 {
			pr.cantTPOT("speculative decoding: the baseline speculates but measured no acceptance (its spec-decode metrics) to take its own step apart")
			return
		}
		k0 = base.K
		f /= (1 + draftCost(base.Method)) / pr.b.SpecAcceptLength // the baseline's step is already speculative
	}
	before := pr.plat.parts.GEMM
	if pr.plat.parts.sum() <= 0 || !pr.plat.ref.HasPrefill {
		pr.warn("speculative decoding: the baseline did not measure its prefills apart from the decode step: the whole of each TPOT is taken as decode steps")
	}
	pr.each(func(p *point) {
		if p.parts.sum() <= 0 || !p.ref.HasPrefill {
			p.parts.Other += p.rest + p.prefill // the step not measured apart
			p.rest, p.prefill = 0, 0
		}
		g0, ok0 := pr.b.microAt(p.batch * float64(k0+1))
		g1, ok1 := pr.b.microAt(p.batch * float64(sc.K+1))
		if ok0 && ok1 && g0 > 0 {
			p.parts.GEMM *= g1 / g0
		}
		p.spec *= f
	})
	pr.line("--speculative-config (%s, k=%d): decode step × (1 + draft cost %.2f) / mean accepted length %.2f (%s) = × %.3f; the verification step's GEMM at M = batch × %d (micro; at the plateau %.2f → %.2f ms)",
		orNone(sc.Method), sc.K, draftCost(sc.Method), l, from, f, sc.K+1, before, pr.plat.parts.GEMM)
	pr.warn("speculative decoding: the draft cost is a rule of thumb per method (ngram 2%%, EAGLE 10%%, MTP 8%%, other 15%% of a step), not measured")
}

// acceptance is the mean accepted length the variant is taken to reach,
// and where it comes from (0 when nothing says).
func (pr *predictor) acceptance(sc specConf) (float64, string) {
	b := pr.b
	if b.SpecAcceptLength > 0 {
		base, ok := parseSpec(pr.base["speculative-config"])
		if ok && base.K != sc.K {
			a := acceptRate(b.SpecAcceptLength, base.K)
			return acceptLength(a, sc.K), fmt.Sprintf("the baseline's %.2f at k=%d (C=%d) is %.2f per draft token: (1 − a^(k+1))/(1 − a) at k=%d", b.SpecAcceptLength, base.K, b.SpecAt, a, sc.K)
		}
		return b.SpecAcceptLength, fmt.Sprintf("measured in the baseline at C=%d", b.SpecAt)
	}
	if sc.Accept > 0 {
		return acceptLength(sc.Accept, sc.K), fmt.Sprintf("the variant's acceptance_rate %.2f per draft token: (1 − a^(k+1))/(1 − a)", sc.Accept)
	}
	return 0, ""
}

// quantBytes are the bytes of a weight by --quantization ("" unquantized
// BF16).
var quantBytes = map[string]float64{"": 2, "none": 2, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2,
	"fp8": 1, "fbgemm_fp8": 1, "ptpc_fp8": 1, "modelopt": 1, "int8": 1, "w8a8": 1, "experts_int8": 1,
	"awq": 0.5, "gptq": 0.5, "awq_marlin": 0.5, "gptq_marlin": 0.5, "marlin": 0.5, "bitsandbytes": 0.5,
	"mxfp4": 0.5, "nvfp4": 0.5, "modelopt_fp4": 0.5}

// quantization is the model of --quantization (the decode step's GEMMs
// read their weights once: time × the bytes' ratio, in the
// weight-read-bound regime) and of --kv-cache-dtype fp8 (attention reads
// half the bytes; the KV cache holds twice the requests).
func (pr *predictor) quantization() {
	if pr.changed("quantization") && pr.needSplit("quantization") {
		q0, q1 := strings.ToLower(pr.base["quantization"]), strings.ToLower(pr.next["quantization"])
		b0, ok0 := quantBytes[q0]
		b1, ok1 := quantBytes[q1]
		if !ok0 || !ok1 {
			pr.cannot = append(pr.cannot, fmt.Sprintf("--quantization %s → %s: bytes per weight not known", orNone(q0), orNone(q1)))
		} else {
			r := b1 / b0
			pr.each(func(p *point) { p.parts.GEMM *= r })
			pr.line("--quantization %s → %s: the decode step's GEMM × %.2f (%.1f → %.1f bytes a weight, read once a step)", orNone(q0), orNone(q1), r, b0, b1)
			pr.warn("quantization: the GEMM scales with the weights' bytes only where reading them bounds it; the prefills (compute-bound) and the baseline's own format (taken from its launch) are as measured")
		}
	}
	if pr.changed("kv-cache-dtype") {
		d0, d1 := strings.ToLower(pr.base["kv-cache-dtype"]), strings.ToLower(pr.next["kv-cache-dtype"])
		if !strings.HasPrefix(d1, "fp8") || strings.HasPrefix(d0, "fp8") {
			pr.cannot = append(pr.cannot, fmt.Sprintf("--kv-cache-dtype %s → %s: not modelled", orNone(d0), orNone(d1)))
			return
		}
		pr.each(func(p *point) { p.parts.Attn *= 0.5 })
		pr.line("--kv-cache-dtype %s → %s: attention × 0.5 (half the KV bytes read), the KV cache holds twice the requests", orNone(d0), orNone(d1))
	}
}

// kvFactor is how many more requests the KV cache holds under the
// variant's --kv-cache-dtype (2 from 16-bit to fp8).
func (pr *predictor) kvFactor() float64 {
	d0, d1 := strings.ToLower(pr.base["kv-cache-dtype"]), strings.ToLower(pr.next["kv-cache-dtype"])
	if strings.HasPrefix(d1, "fp8") && !strings.HasPrefix(d0, "fp8") {
		return 2
	}
	return 1
}

package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/profdeck/profdeck/phases"
)

// Groups of the parts of a whole TPOT split.
const (
	GroupDecode     = "decode step"
	GroupPrefill    = "prefill"
	GroupScheduling = "scheduling"
)

// TPOTPart is one part of a level's TPOT: what a running request waits for,
// per output token, and where the figure comes from.
type TPOTPart struct {
	Group  string  `json:"group"` // GroupDecode, GroupPrefill or GroupScheduling
	Name   string  `json:"name"`
	Ms     float64 `json:"ms"`
	Source string  `json:"source"`
	// Estimate marks a figure that is not a measurement of the part
	// itself (said in Source).
	Estimate bool `json:"estimate,omitempty"`
}

// StepMixView is the engine's step mix at a level and what the split takes
// from it.
type StepMixView struct {
	phases.StepMix
	// Batch is the decode batch taken for every decode step (C, or the
	// most requests the server ran when fewer), DecodeSteps the steps that
	// held decode tokens (decode tokens ÷ Batch).
	Batch       float64 `json:"batch"`
	DecodeSteps float64 `json:"decode_steps"`
	// PromptPerDecodeStep is prompt tokens per decode step; Mixed says the
	// prefills ran inside the decode steps (no steps of their own).
	PromptPerDecodeStep float64 `json:"prompt_tokens_per_decode_step"`
	Mixed               bool    `json:"prefill_in_decode_steps"`
	// StepGEMMms is the GEMM time of a step holding the mean tokens per
	// step (micro, at or between the timed M), StepGEMMFrom how.
	StepGEMMms   float64 `json:"step_gemm_ms,omitempty"`
	StepGEMMFrom string  `json:"step_gemm_from,omitempty"`
}

// TPOTSplit is a level's TPOT split whole: the decode step (all-reduce,
// GEMM, attention, other kernels, the host's gaps), the prefills a running
// request waits for, and scheduling. Parts sum to SumMs; what is not
// measured is named in Unmeasured and NotAccountedMs is TPOT less the sum.
type TPOTSplit struct {
	Concurrency    int          `json:"concurrency"`
	TPOTms         float64      `json:"tpot_ms"` // the level's median TPOT
	MeanTPOTms     float64      `json:"mean_tpot_ms"`
	Mix            *StepMixView `json:"step_mix,omitempty"`
	Parts          []TPOTPart   `json:"parts"`
	SumMs          float64      `json:"sum_ms"`
	NotAccountedMs float64      `json:"not_accounted_ms"`
	Unmeasured     []string     `json:"unmeasured,omitempty"`
	Warnings       []string     `json:"warnings,omitempty"`
}

// GroupMs is the sum of one group's parts.
func (s TPOTSplit) GroupMs(g string) float64 {
	v := 0.0
	for _, p := range s.Parts {
		if p.Group == g {
			v += p.Ms
		}
	}
	return v
}

// windowStep is one profile window per engine or decode step: its wall
// time and device time, split.
type windowStep struct {
	wallMs, devMs float64
	cat           map[string]float64 // ms per decode step by category
}

// decodeWindow is a decode-only window per step: every step there is a
// decode step.
func decodeWindow(p phases.ProfileSummary) (windowStep, bool) {
	if p.StepMix == nil || p.StepMix.Steps <= 0 || p.WindowS <= 0 || p.DecodeSteps <= 0 {
		return windowStep{}, false
	}
	w := windowStep{wallMs: 1000 * p.WindowS / p.StepMix.Steps, devMs: p.GPUPerStepUs / 1000, cat: map[string]float64{}}
	for c, v := range p.PerStepUs {
		w.cat[c] = v / 1000
	}
	return w, true
}

// steadyWindow is a steady window per decode step (decode tokens ÷ batch).
func steadyWindow(p phases.ProfileSummary, batch float64) (windowStep, float64, bool) {
	m := p.StepMix
	if m == nil || m.DecodeTokens <= 0 || p.WindowS <= 0 || batch <= 0 {
		return windowStep{}, 0, false
	}
	n := m.DecodeTokens / batch
	// The trace holds the steps up to stop_profile, a few more than the
	// polled mix counted.
	nDev := n
	if p.DecodeSteps > 0 && m.Steps > 0 {
		nDev = n * float64(p.DecodeSteps) / m.Steps
	}
	return windowStep{wallMs: 1000 * p.WindowS / n, devMs: p.TotalCUDAUs / 1000 / nDev}, n, true
}

// wholeSplit splits the TPOT of level c; nil without the level's TPOT.
func (in budgetInputs) wholeSplit(c int, b BudgetSplit) *TPOTSplit {
	lv, ok := in.levels[c]
	if !ok || lv.MedianTPOTms <= 0 {
		return nil
	}
	s := &TPOTSplit{Concurrency: c, TPOTms: lv.MedianTPOTms, MeanTPOTms: lv.MeanTPOTms}
	batch := float64(c)
	if lv.Server != nil && lv.Server.MaxRunning > 0 && lv.Server.MaxRunning < batch {
		batch = lv.Server.MaxRunning
	}
	if lv.Server != nil && lv.Server.StepMix != nil {
		s.Mix = in.mixView(*lv.Server.StepMix, batch, lv)
	} else {
		s.Unmeasured = append(s.Unmeasured, "the engine's step mix (the server exposes no vllm:iteration_tokens_total, or the level has no window)")
	}
	dec, hasDec := in.engine[c]
	dw, okDW := decodeWindow(dec)
	s.decodeParts(b, dw, hasDec && okDW, c)
	st, hasSt := in.steady[c]
	sw, _, okSW := steadyWindow(st, batch)
	s.trafficParts(in, c, dw, hasDec && okDW, sw, hasSt && okSW, b)
	for _, p := range s.Parts {
		s.SumMs += p.Ms
	}
	s.NotAccountedMs = s.TPOTms - s.SumMs
	if len(s.Unmeasured) == 0 && math.Abs(s.NotAccountedMs) > 0.1*s.TPOTms {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the parts sum to %.2f ms, %+.0f%% off the median TPOT %.2f ms (mean %.2f)",
			s.SumMs, 100*(s.SumMs/s.TPOTms-1), s.TPOTms, s.MeanTPOTms))
	}
	return s
}

// mixView reads the level's step mix: decode steps, prompt tokens per decode
// step, whether the prefills ran inside the decode steps, and the GEMMs of a
// step holding the mean tokens.
func (in budgetInputs) mixView(m phases.StepMix, batch float64, lv phases.LevelResult) *StepMixView {
	v := &StepMixView{StepMix: m, Batch: batch}
	v.DecodeSteps = m.DecodeTokens / batch
	if v.DecodeSteps > 0 {
		v.PromptPerDecodeStep = m.PromptTokens / v.DecodeSteps
	}
	// Prefills of their own add steps; mixed into decode steps they add none.
	prompts := 0.0
	if lv.Completed > 0 && lv.TotalInputTokens > 0 {
		prompts = m.PromptTokens / (float64(lv.TotalInputTokens) / float64(lv.Completed))
	}
	v.Mixed = prompts > 0 && m.Steps-v.DecodeSteps < prompts/2
	if g, from, ok := in.gemmAt(m.TokensPerStep); ok {
		v.StepGEMMms, v.StepGEMMFrom = g, from
	}
	return v
}

// gemmAt is the micro phase's per-step GEMM time at M = tokens, at a timed
// M or interpolated linearly between the two timed M around it.
func (in budgetInputs) gemmAt(tokens float64) (float64, string, bool) {
	var ms []int
	for m := range in.steps {
		if in.steps[m].SumUs > 0 {
			ms = append(ms, m)
		}
	}
	sort.Ints(ms)
	if len(ms) == 0 || tokens <= 0 {
		return 0, "", false
	}
	t := int(math.Ceil(tokens - 1e-9))
	for i, m := range ms {
		if m == t {
			return in.steps[m].SumUs / 1000, fmt.Sprintf("micro at M=%d", m), true
		}
		if m > t && i > 0 {
			a, b := ms[i-1], m
			ua, ub := in.steps[a].SumUs, in.steps[b].SumUs
			f := (tokens - float64(a)) / float64(b-a)
			return (ua + f*(ub-ua)) / 1000, fmt.Sprintf("micro, interpolated between M=%d and M=%d", a, b), true
		}
	}
	return 0, "", false
}

// decodeParts are the decode step's parts: all-reduce and GEMM from the
// isolated benchmarks at M = C, attention, the other kernels and the host's
// gaps from the decode-only profile window at C.
func (s *TPOTSplit) decodeParts(b BudgetSplit, dw windowStep, hasDW bool, c int) {
	add := func(name string, ms float64, src string, est bool) {
		s.Parts = append(s.Parts, TPOTPart{Group: GroupDecode, Name: name, Ms: ms, Source: src, Estimate: est})
	}
	known := 0.0
	if b.HasAR {
		add("all-reduce", b.AllReduceMs, b.arSrc, false)
		known += b.AllReduceMs
	} else {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("all-reduce at M=%d (run the NCCL phase)", c))
	}
	if b.HasGEMM {
		add("GEMM", b.GEMMms, fmt.Sprintf("micro per-step sum at M=%d", c), false)
		known += b.GEMMms
	} else {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("GEMMs at M=%d (run the micro phase)", c))
	}
	if !hasDW {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("attention, the other kernels and the host's gaps of the decode step (no decode-only profile window at C=%d with its step count and wall time)", c))
		return
	}
	src := fmt.Sprintf("decode-only profile window at C=%d", c)
	attn := dw.cat["attention"]
	add("attention", attn, src+": attention kernels per step", false)
	other := dw.devMs - known - attn
	add("other kernels", other, src+": device time per step less the parts above (norms, routing, sampling, copies; and what the isolated all-reduce and GEMM differ from the engine's)", false)
	add("host gaps", dw.wallMs-dw.devMs, src+": wall time per step less device time per step (launches, the host's work between steps)", false)
}

// trafficParts are what a running request waits for beside its decode
// step: the prefills of the requests that arrive while it decodes, and the
// host's extra work on busy steps, from the steady window against the
// decode-only one at C. In a closed loop an arrival finds C-1 requests
// running (not C: its own prefill is its TTFT), so the prefill's device
// time counts (C-1)/C per decode step.
func (s *TPOTSplit) trafficParts(in budgetInputs, c int, dw windowStep, hasDW bool, sw windowStep, hasSW bool, b BudgetSplit) {
	f := float64(c-1) / float64(c)
	if hasDW && hasSW {
		src := fmt.Sprintf("steady window at C=%d (the sweep's own requests) against the decode-only one, per decode step", c)
		s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: "prefill", Ms: f * (sw.devMs - dw.devMs),
			Source: fmt.Sprintf("%s: device time more than the decode-only window's, × (C−1)/C = %.2f (an arrival finds C−1 running)", src, f)})
		s.Parts = append(s.Parts, TPOTPart{Group: GroupScheduling, Name: "scheduling", Ms: (sw.wallMs - sw.devMs) - (dw.wallMs - dw.devMs),
			Source: src + ": host time (wall less device) more than the decode-only window's (admissions, finishing requests, the prefills' own launches)"})
		return
	}
	if m := s.Mix; m != nil && m.PromptPerDecodeStep > 0 && b.HasGEMM {
		if g, from, ok := gemmPrefill(in, m, b); ok {
			s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: "prefill GEMMs", Ms: f * g, Estimate: true,
				Source: fmt.Sprintf("estimate from the step mix: %.1f prompt tokens per decode step, their GEMMs (%s) × (C−1)/C; the prefill's attention and other kernels are not measured", m.PromptPerDecodeStep, from)})
		}
	}
	if !hasSW {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("the prefills' device time and the host's extra work on busy steps (no steady profile window at C=%d)", c))
	} else {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("prefill and scheduling: the steady window at C=%d has no decode-only window to compare with", c))
	}
}

// gemmPrefill is the GEMM time per decode step of the prompt tokens a
// decode step carries: GEMM(M = batch + prompt tokens per decode step)
// less GEMM(M = C).
func gemmPrefill(in budgetInputs, m *StepMixView, b BudgetSplit) (float64, string, bool) {
	g, from, ok := in.gemmAt(m.Batch + m.PromptPerDecodeStep)
	if !ok {
		return 0, "", false
	}
	return max(0, g-b.GEMMms), from + " less M=C", true
}

package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

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
	// Step, Run and Level name the measurement the figure comes from: the
	// campaign step (macro, micro, nccl, profile), its run in the journal
	// (1 the first) and the level (or M) it measured.
	Step  string `json:"step,omitempty"`
	Run   int    `json:"run,omitempty"`
	Level int    `json:"level,omitempty"`
	// Stale says the part was measured under another workload than the
	// sweep's level it splits ("measured at input 256; the sweep at input
	// 1024"); "" when measured together.
	Stale string `json:"stale,omitempty"`
}

// The names of the budget's parts.
const (
	PartComm      = "communication"
	PartGEMM      = "GEMM"
	PartAttention = "attention"
	PartOther     = "other kernels"
	PartHost      = "host gaps"
	PartPrefill   = "prefill"
	PartNotAcc    = "not accounted for"
)

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
// measured is named in Unmeasured and NotAccountedMs is the mean TPOT less
// the sum.
type TPOTSplit struct {
	Concurrency int `json:"concurrency"`
	// TPOTms is the level's mean TPOT: the parts are means over decode
	// steps, so they split the mean (the median is beside).
	TPOTms         float64      `json:"tpot_ms"`
	MedianTPOTms   float64      `json:"median_tpot_ms"`
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

// decodeWindow is a decode-only window per step (every step there is a
// decode step): wall time, the profile's device time and its categories,
// in ms.
type decodeWindow struct {
	wallMs, devMs float64
	cat           map[string]float64
	unprofiled    bool // wallMs was measured with the profiler off
}

func decodeWindowOf(p phases.ProfileSummary) (decodeWindow, bool) {
	if p.StepMix == nil || p.StepMix.Steps <= 0 || p.WindowS <= 0 || p.DecodeSteps <= 0 {
		return decodeWindow{}, false
	}
	w := decodeWindow{wallMs: 1000 * p.WindowS / p.StepMix.Steps, devMs: p.GPUPerStepUs / 1000, cat: map[string]float64{}}
	for c, v := range p.PerStepUs {
		w.cat[c] = v / 1000
	}
	if p.UnprofiledStepMs > 0 {
		w.wallMs, w.unprofiled = p.UnprofiledStepMs, true
	}
	return w, true
}

// decodeSteps reads a step mix: the steps that held decode tokens and
// whether the prefills ran inside them. Prefills of their own add one step
// each (promptLen tokens); mixed into decode steps they add none.
func decodeSteps(m phases.StepMix, c int, promptLen float64) (n float64, mixed bool) {
	prompts := 0.0
	if promptLen > 0 {
		prompts = m.PromptTokens / promptLen
	}
	mixed = prompts > 0 && m.Steps-m.DecodeTokens/float64(c) < prompts/2
	n = m.Steps
	if !mixed {
		n = m.Steps - prompts
	}
	return max(n, m.DecodeTokens/float64(c)), mixed
}

// prefillPerToken is the device time of one prompt token in a steady
// window: its device time less its decode steps' (at the decode-only
// window's device time per step), over its prompt tokens, in ms.
func prefillPerToken(st phases.ProfileSummary, dw decodeWindow, c int, promptLen float64) (float64, bool) {
	m := st.StepMix
	if m == nil || m.PromptTokens <= 0 || m.Steps <= 0 || st.DecodeSteps <= 0 {
		return 0, false
	}
	n, _ := decodeSteps(*m, c, promptLen)
	// The trace holds the steps up to stop_profile, a few more than the
	// polled mix counted.
	nDev := n * float64(st.DecodeSteps) / m.Steps
	return (st.TotalCUDAUs/1000 - nDev*dw.devMs) / m.PromptTokens, true
}

// wholeSplit splits the TPOT of level c; nil without the level's TPOT.
func (in budgetInputs) wholeSplit(c int, b BudgetSplit) *TPOTSplit {
	lv, ok := in.levels[c]
	if !ok || lv.MeanTPOTms <= 0 || lv.Few() || len(lv.Steered) > 0 {
		return nil // too few requests, or steered: split says why
	}
	s := &TPOTSplit{Concurrency: c, TPOTms: lv.MeanTPOTms, MedianTPOTms: lv.MedianTPOTms}
	promptLen := 0.0
	if lv.Completed > 0 {
		promptLen = float64(lv.TotalInputTokens) / float64(lv.Completed)
	}
	if lv.Server != nil && lv.Server.StepMix != nil {
		s.Mix = in.mixView(*lv.Server.StepMix, c, promptLen)
	} else {
		s.Unmeasured = append(s.Unmeasured, "the engine's step mix (the server exposes no vllm:iteration_tokens_total, or the level has no window)")
	}
	dw, okDW := decodeWindowOf(in.engine[c])
	fromMicro := s.decodeParts(b, dw, okDW, c, lv.PrefillWait)
	if w := in.expertLoad(c); w != "" && fromMicro {
		s.Warnings = append(s.Warnings, w)
	}
	s.prefillPart(in, c, dw, okDW, promptLen, b)
	complete := len(s.Unmeasured) == 0
	s.Unmeasured = append(s.Unmeasured, "scheduling: the host's extra work on busy steps (admissions, finishing requests) is not measured apart: "+
		"a profiled window inflates host time, and the engine's step period counts prefills no running request waited for; it is in what the parts leave of TPOT")
	for _, p := range s.Parts {
		s.SumMs += p.Ms
	}
	s.NotAccountedMs = s.TPOTms - s.SumMs
	if d := s.SumMs/s.TPOTms - 1; complete && math.Abs(d) > 0.1 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the measured parts sum to %.2f ms, %+.0f%% off the mean TPOT %.2f ms (median %.2f)",
			s.SumMs, 100*d, s.TPOTms, s.MedianTPOTms))
	}
	for _, p := range s.Parts {
		if p.Ms < 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s is negative (%.2f ms): the parts it is left from over-state the step (e.g. routed experts timed at the load of uniform routing, where the served tokens route to fewer experts)", p.Name, p.Ms))
		}
	}
	return s
}

// mixView reads the level's step mix: decode steps and their batch, prompt
// tokens per decode step, whether the prefills ran inside the decode steps,
// and the GEMMs of a step holding the mean tokens.
func (in budgetInputs) mixView(m phases.StepMix, c int, promptLen float64) *StepMixView {
	v := &StepMixView{StepMix: m, Batch: float64(c)}
	v.DecodeSteps, v.Mixed = decodeSteps(m, c, promptLen)
	if v.DecodeSteps > 0 {
		v.Batch = min(float64(c), m.DecodeTokens/v.DecodeSteps)
		v.PromptPerDecodeStep = m.PromptTokens / v.DecodeSteps
	}
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

// decodeParts are the decode step's parts, the engine's own first: from
// the decode-only profile window at C (its kernels, shapes, routing and
// weight format) communication, GEMM (dense, and the routed and shared
// experts as served: the MoE kernels), attention and the other kernels;
// where the window timed none, communication from the NCCL burst and GEMM
// from micro at M = C, each marked an estimate. The isolated figures stand
// beside the engine's in the source, never added on top. Then the host's
// gaps: the decode step's wall less those. The wall is the sweep's own
// clean gap (its requests' token gaps with no other request's first token
// inside: the same requests, contexts and routing as the TPOT it splits,
// no profiler), else the decode-only window's step period. It reports
// whether GEMM came from micro.
func (s *TPOTSplit) decodeParts(b BudgetSplit, dw decodeWindow, hasDW bool, c int, pw *phases.PrefillWait) (fromMicro bool) {
	known := 0.0
	add := func(p TPOTPart) {
		p.Group = GroupDecode
		s.Parts = append(s.Parts, p)
		known += p.Ms
	}
	src := fmt.Sprintf("decode-only profile window at C=%d", c)
	prof := func(name string, ms float64, text string) TPOTPart {
		return TPOTPart{Name: name, Ms: ms, Source: src + ": " + text, Step: phases.Profile, Run: b.engineRun, Level: c}
	}
	s.commPart(b, dw, hasDW, c, add, prof)
	engineGEMM := hasDW && dw.cat["gemm"]+dw.cat["moe"] > 0
	switch {
	case engineGEMM:
		text := fmt.Sprintf("GEMM kernels %.2f ms + MoE kernels (routed and shared experts as served, routing) %.2f ms per step, as the engine ran them", dw.cat["gemm"], dw.cat["moe"])
		if b.HasGEMM {
			text += fmt.Sprintf("; micro's isolated GEMMs at M=%d beside, a cross-check: %.2f ms", c, b.GEMMms)
		}
		add(prof(PartGEMM, dw.cat["gemm"]+dw.cat["moe"], text))
	case b.HasGEMM:
		fromMicro = true
		add(TPOTPart{Name: PartGEMM, Ms: b.GEMMms, Estimate: true, Step: phases.Micro, Run: b.gemmRun, Level: c,
			Source: fmt.Sprintf("micro's isolated per-step sum at M=%d (no decode-only profile window at C=%d)", c, c)})
		if b.UpperBoundMs > 0 {
			s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("the GEMMs of quantized weights (%s): timed in BF16 they take %.2f ms, an upper bound kept out of the sum; "+
				"timing them as served needs the engine's kernels on the host (vLLM importable, a format micro writes: micro's env says why not in engine_moe and engine_linear) "+
				"or a decode-only profile window at C=%d", strings.Join(b.UpperBound, ", "), b.UpperBoundMs, c))
		}
	default:
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("GEMMs at M=%d (run the micro phase, or profile a decode-only window at C=%d)", c, c))
	}
	if !hasDW {
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("attention, the other kernels and the host's gaps of the decode step (no decode-only profile window at C=%d with its step count and wall time)", c))
		return fromMicro
	}
	attn, other := dw.cat["attention"], dw.cat["other"]
	add(prof(PartAttention, attn, "attention kernels per step"))
	add(prof(PartOther, other, "kernels per step that are neither GEMM, MoE, attention nor communication (norms, sampling, copies)"))
	s.hostGaps(dw, src, pw, known, b, c)
	return fromMicro
}

// commPart is the decode step's communication: the engine's own from the
// decode-only window, the isolated NCCL burst beside; without a window,
// the burst, marked an estimate.
func (s *TPOTSplit) commPart(b BudgetSplit, dw decodeWindow, hasDW bool, c int, add func(TPOTPart), prof func(string, float64, string) TPOTPart) {
	switch {
	case hasDW:
		text := "communication kernels per step (all-reduce, all-to-all), as the engine ran them"
		if b.HasAR {
			text += fmt.Sprintf("; the isolated NCCL burst at M=%d beside, a cross-check: %.2f ms", c, b.AllReduceMs)
		}
		add(prof(PartComm, dw.cat["communication"], text))
	case b.HasAR:
		add(TPOTPart{Name: PartComm, Ms: b.AllReduceMs, Estimate: b.AllReduceMs > 0, Step: phases.NCCL, Run: b.arRun, Level: c,
			Source: b.arSrc + fmt.Sprintf(" (the isolated burst: no decode-only profile window at C=%d)", c)})
	default:
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("communication at M=%d (run the NCCL phase, or profile a decode-only window at C=%d)", c, c))
	}
}

// hostGaps is the decode step's wall less its device parts (known).
func (s *TPOTSplit) hostGaps(dw decodeWindow, src string, pw *phases.PrefillWait, known float64, b BudgetSplit, c int) {
	part := TPOTPart{Group: GroupDecode, Name: PartHost, Step: phases.Profile, Run: b.engineRun, Level: c}
	wallMs, wall := dw.wallMs, src+": wall time per step (profiler on: it adds host time to each step)"
	if dw.unprofiled {
		wall = src + ": wall time per step of the same load just before the window, profiler off,"
	}
	if pw != nil && pw.Measured > 0 && pw.CleanGapMs > 0 && (pw.CleanShare == 0 || pw.CleanShare >= minCleanShare) {
		wallMs = pw.CleanGapMs
		part.Step, part.Run = phases.Macro, b.levelRun
		wall = fmt.Sprintf("the sweep's own decode step: %.2f ms, the mean over its %d requests of each one's median token gap that held no other request's first token "+
			"(the decode-only window's step period beside: %.2f ms),", pw.CleanGapMs, pw.Measured, dw.wallMs)
	} else if pw != nil && pw.CleanShare > 0 {
		wall += fmt.Sprintf(" (the sweep's clean gaps are too few to stand in: %.0f%% of its gaps)", 100*pw.CleanShare)
	}
	part.Ms, part.Source = wallMs-known, wall+" less the parts above (launches, the host's work between steps)"
	s.Parts = append(s.Parts, part)
}

// minCleanShare is the share of a level's token gaps that must have held
// no other request's first token for their median to stand for the decode
// step: with fewer, most steps carried prefills and the median is one of
// them.
const minCleanShare = 0.25

// prefillPart is what a running request waits for while others' prompts
// are prefilled, per output token. Measured first from the sweep's own
// requests, in wall time: their token gaps that held another request's
// first token, less their clean gap (the device time alone is beside in
// the source: eager prefills take host time too). Without those, the
// device time of a prompt token (the steady window against the
// decode-only one at C) × the prompt tokens a running request waited for
// per output token (each prompt's tokens once for each request decoding
// when it was prefilled); without those either, × the level's prompt
// tokens per decode step × (C−1)/C (in a closed loop an arrival finds C−1
// running: its own prefill is its TTFT), which over-states a level whose
// requests arrived together. Without a steady window, the prompt tokens'
// GEMMs alone are estimated from the step mix.
func (s *TPOTSplit) prefillPart(in budgetInputs, c int, dw decodeWindow, hasDW bool, promptLen float64, b BudgetSplit) {
	m := s.Mix
	pw := in.levels[c].PrefillWait
	f, fSrc := float64(c-1)/float64(c), "(C−1)/C"
	if pw != nil {
		f, fSrc = pw.DecodeBatch/float64(c), fmt.Sprintf("%.1f requests decoding per prompt token of C=%d (the sweep's requests)", pw.DecodeBatch, c)
	}
	tok, hasTok := 0.0, false
	if st, ok := in.steady[c]; ok && hasDW {
		tok, hasTok = prefillPerToken(st, dw, c, promptLen)
	}
	if pw != nil && pw.Measured > 0 {
		src := fmt.Sprintf("wall time: the sweep's %d requests' token gaps that held another request's first token (a prefill between their steps, or its chunk inside one), "+
			"less their clean gap (%.2f ms, the mean of each request's median gap that held none), per output token", pw.Measured, pw.CleanGapMs)
		if hasTok {
			src += fmt.Sprintf("; device time alone %.2f ms (%.4f ms per prompt token, steady window at C=%d against the decode-only one, × %.1f prompt tokens waited for per output token)",
				tok*pw.PromptTokensPerToken, tok, c, pw.PromptTokensPerToken)
		}
		s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: PartPrefill, Ms: pw.StallMsPerToken, Source: src, Step: phases.Macro, Run: b.levelRun, Level: c})
		return
	}
	if hasTok && pw != nil { // the sweep's own wait: no step mix needed
		s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: PartPrefill, Ms: tok * pw.PromptTokensPerToken, Step: phases.Profile, Run: b.engineRun, Level: c,
			Source: fmt.Sprintf("%.4f ms of device time per prompt token (steady window at C=%d against the decode-only one) × %.1f prompt tokens a running request waited for per output token "+
				"(the sweep's %d requests: each prompt's tokens once for each request decoding when it was prefilled, %.1f of C=%d on average)",
				tok, c, pw.PromptTokensPerToken, pw.Requests, pw.DecodeBatch, c)})
		return
	}
	if m == nil {
		s.Unmeasured = append(s.Unmeasured, "prefill: no step mix at this level")
		return
	}
	if hasTok {
		s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: PartPrefill, Ms: f * tok * m.PromptPerDecodeStep, Step: phases.Profile, Run: b.engineRun, Level: c,
			Source: fmt.Sprintf("%.4f ms of device time per prompt token (steady window at C=%d against the decode-only one) × %.1f prompt tokens per decode step (the level's step mix) × (C−1)/C = %.2f",
				tok, c, m.PromptPerDecodeStep, f)})
		return
	}
	if g, from, ok := gemmPrefill(in, m, b); ok && m.PromptPerDecodeStep > 0 {
		s.Parts = append(s.Parts, TPOTPart{Group: GroupPrefill, Name: PartPrefill, Ms: f * g, Estimate: true, Step: phases.Micro, Run: b.gemmRun, Level: c,
			Source: fmt.Sprintf("estimate from the step mix: %.1f prompt tokens per decode step, their GEMMs (%s) × %s", m.PromptPerDecodeStep, from, fSrc)})
		s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("the prefills' attention and other kernels (no steady profile window at C=%d)", c))
		return
	}
	s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("prefill (no steady profile window at C=%d, and no GEMM timing at the step's tokens)", c))
}

// gemmPrefill is the GEMM time per decode step of the prompt tokens a
// decode step carries: GEMM(M = batch + prompt tokens per decode step)
// less GEMM(M = C).
func gemmPrefill(in budgetInputs, m *StepMixView, b BudgetSplit) (float64, string, bool) {
	if !b.HasGEMM {
		return 0, "", false
	}
	g, from, ok := in.gemmAt(m.Batch + m.PromptPerDecodeStep)
	if !ok {
		return 0, "", false
	}
	return max(0, g-b.GEMMms), from + " less M=C", true
}

// expertLoad says aloud the routed experts' load micro timed at M=c: the
// experts a step of c tokens touches under uniform top-k routing, E·(1 −
// (1 − k/E)^c), each holding about c·k/active tokens. It is an estimate:
// the engine's routing is not reported, and a skewed router (or tokens
// that repeat) touches fewer. "" when micro timed no routed experts.
func (in budgetInputs) expertLoad(c int) string {
	if c <= 1 {
		return "" // one token's top-k are k distinct experts, whatever the router
	}
	experts, tokens := 0, 0
	for n, r := range in.gemms[c] {
		if strings.HasPrefix(n, "experts.w13") {
			experts += max(r.Batch, 1)
			tokens += r.M * max(r.Batch, 1)
		}
	}
	if experts == 0 {
		return ""
	}
	return fmt.Sprintf("GEMM at M=%d: the routed experts are timed at the expected load of uniform top-k routing, %d experts holding %d routed tokens (about %.1f each): "+
		"an estimate, as the engine does not report its routing; a skewed router, or tokens that repeat, touches fewer experts and takes less", c, experts, tokens, float64(tokens)/float64(experts))
}

package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// BudgetSplit is one decode step's time split into all-reduce, GEMM and the
// rest, at one concurrency. TPOT comes from the macro sweep (the level's
// median TPOT), the all-reduce time from the NCCL burst at M = concurrency
// (every decode step all-reduces M tokens), the GEMM time from the micro
// phase's per-step sum at the same M. A missing input is named in Missing and
// the figures that depend on it are left out (Has* false).
type BudgetSplit struct {
	Label       string `json:"label"` // "single stream (C=1)" or "plateau (C=128)"
	Concurrency int    `json:"concurrency"`
	// Headline is the budget in one line, as every view quotes it
	// (Summary); Split its parts: the whole split of the level's mean
	// TPOT (the decode step's parts, prefill, not accounted for), each
	// naming its source, or without a whole split the isolated
	// benchmarks' three parts.
	Headline string       `json:"headline"`
	Split    []BudgetPart `json:"split,omitempty"`
	// Close names the measurement that would close what is not accounted
	// for, when it is above 10% of TPOT.
	Close string `json:"close,omitempty"`
	// MeanTPOTms is the level's mean TPOT, the one the split splits;
	// TPOTms its median.
	MeanTPOTms float64 `json:"mean_tpot_ms,omitempty"`
	TPOTms     float64 `json:"median_tpot_ms"`
	// AllReduceMs and GEMMms are the isolated benchmarks (NCCL, micro) at
	// M = C: cross-checks beside the engine's parts, never added on top
	// of them.
	AllReduceMs float64 `json:"isolated_allreduce_ms"`
	GEMMms      float64 `json:"isolated_gemm_ms"`
	HasTPOT     bool    `json:"has_tpot"`
	HasAR       bool    `json:"has_allreduce"`
	HasGEMM     bool    `json:"has_gemm"`
	// GEMMPartial: GEMMms sums the GEMMs timed so far, the micro run having
	// written no per-step total (yet): not a final figure.
	GEMMPartial bool `json:"gemm_partial,omitempty"`
	// Sources says where each figure came from, in words.
	Sources []string `json:"sources,omitempty"`
	// Missing names each input that was not measured, in words.
	Missing []string `json:"missing,omitempty"`
	// Warnings flag figures that do not add up (e.g. measured parts larger
	// than the TPOT they split).
	Warnings []string `json:"warnings,omitempty"`
	// Engine is the same step in the running engine, from a torch profile
	// window at this concurrency (nil when none was captured).
	Engine *EngineSplit `json:"engine,omitempty"`
	// Whole is the level's TPOT split whole: the decode step, the prefills
	// a running request waits for, and scheduling (nil without a TPOT).
	Whole *TPOTSplit `json:"whole,omitempty"`
	// UpperBound lists GEMMs timed in a wider format than served (BF16
	// for an int4 model): an upper bound, kept out of GEMMms and said.
	UpperBound   []string `json:"upper_bound,omitempty"`
	UpperBoundMs float64  `json:"upper_bound_ms,omitempty"`

	arSrc string // the all-reduce's source, for the whole split
	// The journal's run (1 the first of its step) of each input.
	levelRun, arRun, gemmRun, engineRun int
}

// EngineSplit is a decode step as the torch profile saw it in the running
// engine: device time per step by category, over a window of Steps steps
// at one concurrency.
type EngineSplit struct {
	Steps       int     `json:"steps"`
	StepsFrom   string  `json:"steps_from"`
	CommMs      float64 `json:"communication_ms"`
	GEMMms      float64 `json:"gemm_ms"`
	AttentionMs float64 `json:"attention_ms"`
	MoEms       float64 `json:"moe_ms"`
	OtherMs     float64 `json:"other_ms"`
	StepMs      float64 `json:"step_ms"` // device time per step: the parts' sum
}

// RestMs is what the isolated benchmarks' "rest" covers in the engine:
// attention, MoE and other.
func (e EngineSplit) RestMs() float64 { return e.AttentionMs + e.MoEms + e.OtherMs }

// BudgetResult is the decode-time budget at single stream and, when a
// plateau was found, at the plateau's concurrency.
type BudgetResult struct {
	Single  BudgetSplit  `json:"single"`
	Plateau *BudgetSplit `json:"plateau,omitempty"` // nil when the sweep has named no plateau
	// Levels are the splits at every profiled level (C=1, the levels
	// between, the plateau), in order of C.
	Levels []BudgetSplit `json:"levels,omitempty"`
	// ProfileCheck compares with the torch profile's communication share,
	// when a profile was summarised ("" otherwise); the figures follow.
	ProfileCheck  string  `json:"profile_check,omitempty"`
	ProfileShare  float64 `json:"profile_communication_share,omitempty"` // communication share of device time, 0..1
	ProfileCommMs float64 `json:"profile_communication_ms,omitempty"`    // communication per decode step (0 when unknown)
	ProfileStepMs float64 `json:"profile_step_ms,omitempty"`             // device time per decode step (0 when unknown)

	promptLen map[int]float64 // each level's mean prompt tokens per request
}

// Complete reports whether TPOT and both parts are known.
func (b BudgetSplit) Complete() bool { return b.HasTPOT && b.HasAR && b.HasGEMM }

// RestMs is TPOT minus the known parts; ok is false without a TPOT.
func (b BudgetSplit) RestMs() (ms float64, ok bool) {
	if !b.HasTPOT {
		return 0, false
	}
	r := b.TPOTms
	if b.HasAR {
		r -= b.AllReduceMs
	}
	if b.HasGEMM {
		r -= b.GEMMms
	}
	return r, true
}

// Pct is part as a percentage of TPOT (0 without a TPOT).
func (b BudgetSplit) Pct(partMs float64) float64 {
	if !b.HasTPOT || b.TPOTms <= 0 {
		return 0
	}
	return 100 * partMs / b.TPOTms
}

// Any reports whether at least one input is known.
func (b BudgetSplit) Any() bool { return b.HasTPOT || b.HasAR || b.HasGEMM }

// budgetInputs are the latest measurements of each kind, by concurrency/M.
type budgetInputs struct {
	levels  map[int]phases.LevelResult
	bursts  map[int]phases.NCCLBurst
	steps   map[int]phases.GEMMStep
	gemms   map[int]map[string]phases.GEMMResult // M → name → latest
	plateau *phases.Plateau
	profile *phases.ProfileSummary
	engine  map[int]phases.ProfileSummary // per-level decode-only profile windows, by C
	steady  map[int]phases.ProfileSummary // per-level windows of the sweep's own traffic, by C
	noComm  *phases.NCCLNone              // the NCCL phase found no collectives (one GPU)
	// ncclWarn are the NCCL run under way's words on the burst figures it
	// left out (its warnings, and its errors at an M), by M (0: every M); burstWarn those that applied to each
	// burst kept, by M, from the run that timed it (the script says them
	// before the burst's line).
	ncclWarn  map[int][]string
	burstWarn map[int][]string
	// runs counts each step's runs so far; runOf is the run of each input
	// kept, by step and C (or M).
	runs  map[string]int
	runOf map[string]map[int]int
	// work is the latest sweep's workload; workOf the workload of the
	// sweep that was latest when each input kept was measured.
	work   workload
	workOf map[string]map[int]workload
}

// keep records that the input of step at c came from the step's current run.
func (in *budgetInputs) keep(step string, c int) {
	if in.runOf[step] == nil {
		in.runOf[step] = map[int]int{}
	}
	in.runOf[step][c] = in.runs[step]
	if in.workOf[step] == nil {
		in.workOf[step] = map[int]workload{}
	}
	in.workOf[step][c] = in.work
}

// sayOfBurst keeps the NCCL run's words on the burst at M (0: every M).
func (in *budgetInputs) sayOfBurst(m int, text string) {
	if in.ncclWarn == nil {
		in.ncclWarn = map[int][]string{}
	}
	in.ncclWarn[m] = append(in.ncclWarn[m], text)
}

func collectBudgetInputs(events []phases.Event) budgetInputs {
	in := budgetInputs{
		levels: map[int]phases.LevelResult{},
		bursts: map[int]phases.NCCLBurst{},
		steps:  map[int]phases.GEMMStep{},
		gemms:  map[int]map[string]phases.GEMMResult{},
		engine: map[int]phases.ProfileSummary{},
		steady: map[int]phases.ProfileSummary{},

		burstWarn: map[int][]string{},
		runs:      map[string]int{},
		runOf:     map[string]map[int]int{},
		workOf:    map[string]map[int]workload{},
	}
	for _, ev := range events {
		in.add(ev)
	}
	return in
}

// add takes one event: the latest of each kind of measurement is kept.
func (in *budgetInputs) add(ev phases.Event) {
	switch d := ev.Data.(type) {
	case phases.PhaseStarted:
		in.runs[d.Name]++
		if d.Name == phases.Macro {
			in.work = workloadOf(d.Params)
		}
		if d.Name == phases.NCCL {
			in.ncclWarn = nil
		}
	case phases.NCCLWarning:
		if d.Tokens == 0 {
			in.sayOfBurst(d.M, d.Text)
		}
	case phases.ScriptError:
		// A capture that failed at its M: the burst of that M has no
		// figure between GEMMs for this reason (the later M's warn).
		if ev.Kind == phases.KindNCCLError && d.Step > 0 {
			in.sayOfBurst(d.Step, "error: "+d.What+": "+d.Err)
		}
	case phases.LevelResult:
		// Closed-loop levels only: C is the batch. A level steered by
		// hand never replaces one that ran as planned.
		if prev, ok := in.levels[d.Concurrency]; d.Rate == 0 && (len(d.Steered) == 0 || !ok || len(prev.Steered) > 0) {
			in.levels[d.Concurrency] = d
			in.keep(phases.Macro, d.Concurrency)
		}
	case phases.Plateau:
		// Nor does a plateau found among steered levels.
		if p := d; len(p.Steered) == 0 || in.plateau == nil || len(in.plateau.Steered) > 0 {
			in.plateau = &p
		}
	case phases.NCCLBurst:
		in.bursts[d.M] = d
		in.keep(phases.NCCL, d.M)
		in.burstWarn[d.M] = append(slices.Clone(in.ncclWarn[d.M]), in.ncclWarn[0]...)
	case phases.GEMMStep:
		in.steps[d.M] = d
		in.keep(phases.Micro, d.M)
	case phases.GEMMResult:
		m := d.Step // the decode batch; d.M may be a per-expert M
		if m <= 0 {
			m = d.M
		}
		if in.gemms[m] == nil {
			in.gemms[m] = map[string]phases.GEMMResult{}
		}
		in.gemms[m][d.Name] = d
	case phases.NCCLNone:
		n := d
		in.noComm = &n
	case phases.ProfileSummary:
		if d.Window == phases.WindowSteady {
			if d.Level > 0 {
				in.steady[d.Level] = d
			}
			return
		}
		p := d
		in.profile = &p
		if d.Level > 0 && d.DecodeSteps > 0 && len(d.PerStepUs) > 0 {
			in.engine[d.Level] = d
			in.keep(phases.Profile, d.Level)
		}
	}
}

// arSource keeps the all-reduce's source for the whole split and, when
// the burst at M=c has no figure between GEMMs, adds the NCCL run's words
// on why (the burst between GEMMs not slower than the GEMMs alone, …).
func (in budgetInputs) arSource(b *BudgetSplit, c int) {
	if !b.HasAR {
		return
	}
	b.arSrc = strings.TrimPrefix(b.Sources[len(b.Sources)-1], "all-reduce: ")
	if br, ok := in.bursts[c]; ok && br.InStepMs <= 0 {
		for _, w := range in.burstWarn[c] {
			b.Sources = append(b.Sources, "all-reduce, as the NCCL run said: "+w)
		}
	}
}

// Budget computes the decode-time budget from journalled events. It is pure:
// the same events give the same result. Later measurements replace earlier
// ones of the same level or M.
func Budget(events []phases.Event) BudgetResult {
	in := collectBudgetInputs(events)
	res := BudgetResult{Single: in.split("single stream", 1)}
	if p := in.profile; p != nil && p.TotalCUDAUs > 0 {
		res.ProfileShare, res.ProfileCommMs, res.ProfileStepMs = p.CommunicationShare, p.CommPerStepUs/1000, p.GPUPerStepUs/1000
		res.ProfileCheck = fmt.Sprintf("cross-check: the torch profile puts communication at %.1f%% of device time", 100*p.CommunicationShare)
		if p.Level > 0 {
			res.ProfileCheck = fmt.Sprintf("cross-check: the torch profile at C=%d puts communication at %.1f%% of device time", p.Level, 100*p.CommunicationShare)
		}
		if p.CommPerStepUs > 0 {
			res.ProfileCheck += fmt.Sprintf(" (%.2f ms per decode step", p.CommPerStepUs/1000)
			if p.GPUPerStepUs > 0 {
				res.ProfileCheck += fmt.Sprintf(" of %.2f ms", p.GPUPerStepUs/1000)
			}
			res.ProfileCheck += ")"
		}
	}
	if in.plateau != nil && in.plateau.Concurrency > 0 {
		p := in.split("plateau", in.plateau.Concurrency)
		res.Plateau = &p
	}
	res.Levels = in.profiledLevels(res)
	res.promptLen = map[int]float64{}
	for c, lv := range in.levels {
		if lv.Completed > 0 {
			res.promptLen[c] = float64(lv.TotalInputTokens) / float64(lv.Completed)
		}
	}
	return res
}

// profiledLevels are the splits at C=1, the plateau and every level with
// a profile window, in order of C (those the sweep measured).
func (in budgetInputs) profiledLevels(res BudgetResult) []BudgetSplit {
	cs := map[int]bool{1: true}
	if res.Plateau != nil {
		cs[res.Plateau.Concurrency] = true
	}
	for c := range in.engine {
		cs[c] = true
	}
	for c := range in.steady {
		cs[c] = true
	}
	var keys []int
	for c := range cs {
		if _, ok := in.levels[c]; ok {
			keys = append(keys, c)
		}
	}
	sort.Ints(keys)
	var out []BudgetSplit
	for _, c := range keys {
		switch {
		case c == 1:
			out = append(out, res.Single)
		case res.Plateau != nil && c == res.Plateau.Concurrency:
			out = append(out, *res.Plateau)
		default:
			out = append(out, in.split("level", c))
		}
	}
	return out
}

func (in budgetInputs) split(name string, c int) BudgetSplit {
	b := BudgetSplit{Label: fmt.Sprintf("%s (C=%d)", name, c), Concurrency: c,
		levelRun: in.runOf[phases.Macro][c], arRun: in.runOf[phases.NCCL][c], gemmRun: in.runOf[phases.Micro][c], engineRun: in.runOf[phases.Profile][c]}
	lv, ok := in.levels[c]
	switch {
	case ok && lv.MedianTPOTms > 0 && lv.Few():
		b.Missing = append(b.Missing, fmt.Sprintf("TPOT at C=%d: the level completed only %d request(s), fewer than %d, too few to quote (run the sweep with more requests or a longer duration)",
			c, lv.Completed, phases.MinRequests))
	case ok && lv.MedianTPOTms > 0 && len(lv.Steered) > 0:
		b.Missing = append(b.Missing, fmt.Sprintf("TPOT at C=%d: the level was steered by hand (%s), so it measured something other than C=%d (run the sweep again without steering)",
			c, strings.Join(lv.Steered, "; "), c))
	case ok && lv.MedianTPOTms > 0:
		b.TPOTms, b.HasTPOT = lv.MedianTPOTms, true
		b.Sources = append(b.Sources, fmt.Sprintf("TPOT: median of macro level C=%d (%d requests)", c, lv.Completed))
	default:
		b.Missing = append(b.Missing, fmt.Sprintf("TPOT at C=%d (run the macro sweep with concurrency %d)", c, c))
	}
	if br, ok := in.bursts[c]; !ok && in.noComm != nil {
		b.AllReduceMs, b.HasAR = 0, true
		b.Sources = append(b.Sources, "all-reduce: none — "+in.noComm.Reason)
	} else if ok && br.InStepMs > 0 {
		b.AllReduceMs, b.HasAR = br.InStepMs, true
		b.Sources = append(b.Sources, fmt.Sprintf("all-reduce: NCCL burst at M=%d (%d × %s), each after a GEMM that evicts L2, in a CUDA graph, less the GEMMs (back to back: %.2f ms)", c, br.Count, units.Bytes(br.Bytes), br.GraphMs))
	} else if ok && br.GraphMs > 0 {
		b.AllReduceMs, b.HasAR = br.GraphMs, true
		b.Sources = append(b.Sources, fmt.Sprintf("all-reduce: NCCL burst at M=%d (%d × %s) replayed from a CUDA graph, as vLLM decodes (eager: %.2f ms)", c, br.Count, units.Bytes(br.Bytes), br.TotalMs))
	} else if ok && br.TotalMs > 0 {
		b.AllReduceMs, b.HasAR = br.TotalMs, true
		b.Sources = append(b.Sources, fmt.Sprintf("all-reduce: NCCL burst at M=%d (%d × %s)", c, br.Count, units.Bytes(br.Bytes)))
	} else {
		b.Missing = append(b.Missing, fmt.Sprintf("all-reduce burst at M=%d (run the NCCL phase with M=%d)", c, c))
	}
	in.arSource(&b, c)
	if st, ok := in.steps[c]; ok && st.SumUs > 0 {
		b.GEMMms, b.HasGEMM = st.SumUs/1000, true
		b.Sources = append(b.Sources, fmt.Sprintf("GEMM: micro per-step sum at M=%d", c))
	} else if g := in.gemms[c]; len(g) > 0 {
		names := make([]string, 0, len(g))
		for n := range g {
			names = append(names, n)
		}
		sort.Strings(names)
		sum := 0.0
		for _, n := range names {
			r := g[n]
			if r.StepUs > 0 {
				sum += r.StepUs
			} else {
				sum += r.Us * float64(max(r.PerStep, 1))
			}
		}
		b.GEMMms, b.HasGEMM, b.GEMMPartial = sum/1000, true, true
		b.Sources = append(b.Sources, fmt.Sprintf("GEMM: sum of %d timed GEMMs at M=%d (no per-step total recorded)", len(g), c))
	} else {
		b.Missing = append(b.Missing, fmt.Sprintf("GEMM step sum at M=%d (run the micro phase with M=%d)", c, c))
	}
	if b.HasGEMM {
		in.upperBound(&b, c)
	}
	if p, ok := in.engine[c]; ok {
		b.Engine = engineSplit(p)
		b.Sources = append(b.Sources, fmt.Sprintf("in the engine: torch profile window at C=%d, %d decode steps (%s)", c, p.DecodeSteps, p.DecodeStepsSource))
		if b.HasAR && b.AllReduceMs > 0 {
			if d := b.Engine.CommMs/b.AllReduceMs - 1; d > 0.25 || d < -0.25 {
				b.Warnings = append(b.Warnings, fmt.Sprintf("communication takes %.2f ms per step in the engine vs %.2f ms for the isolated all-reduce (%+.0f%%)",
					b.Engine.CommMs, b.AllReduceMs, 100*d))
			}
		}
	}
	if rest, ok := b.RestMs(); ok && rest < 0 {
		b.Warnings = append(b.Warnings, fmt.Sprintf("measured parts exceed TPOT by %.2f ms: the isolated benchmarks overlap or over-state the step", -rest))
	}
	b.Whole = in.wholeSplit(c, b)
	in.markStale(&b)
	b.headline()
	return b
}

// engineSplit is a profile window's per-step split in milliseconds.
func engineSplit(p phases.ProfileSummary) *EngineSplit {
	ms := func(c string) float64 { return p.PerStepUs[c] / 1000 }
	e := &EngineSplit{Steps: p.DecodeSteps, StepsFrom: p.DecodeStepsSource, CommMs: ms("communication"), GEMMms: ms("gemm"),
		AttentionMs: ms("attention"), MoEms: ms("moe"), OtherMs: ms("other")}
	e.StepMs = e.CommMs + e.GEMMms + e.AttentionMs + e.MoEms + e.OtherMs
	return e
}

// upperBound takes the GEMMs of weights served in another format than
// they were timed in (BF16 timing of an int4 expert) out of the GEMM part:
// their time is an upper bound, kept beside the sum and said.
func (in budgetInputs) upperBound(b *BudgetSplit, c int) {
	g := in.gemms[c]
	var names []string
	sum := 0.0
	served := map[string]bool{}
	for n, r := range g {
		if r.Served == "" || r.AsServed {
			continue
		}
		names = append(names, n)
		served[r.Served] = true
		if r.StepUs > 0 {
			sum += r.StepUs
		} else {
			sum += r.Us * float64(max(r.PerStep, 1))
		}
	}
	if sum <= 0 {
		return
	}
	sort.Strings(names)
	var formats []string
	for f := range served {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	ms := sum / 1000
	b.UpperBound, b.UpperBoundMs = names, ms
	b.GEMMms = max(0, b.GEMMms-ms)
	b.Sources = append(b.Sources, fmt.Sprintf("GEMM: %s (weights served as %s) timed in BF16 take %.2f ms at M=%d: an upper bound, kept out of the GEMM part",
		strings.Join(names, ", "), strings.Join(formats, ", "), ms, c))
}

package report

import (
	"fmt"
	"sort"

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
	Label       string // "single stream (C=1)" or "plateau (C=128)"
	Concurrency int
	TPOTms      float64
	AllReduceMs float64
	GEMMms      float64
	HasTPOT     bool
	HasAR       bool
	HasGEMM     bool
	// Sources says where each figure came from, in words.
	Sources []string
	// Missing names each input that was not measured, in words.
	Missing []string
	// Warnings flag figures that do not add up (e.g. measured parts larger
	// than the TPOT they split).
	Warnings []string
	// Engine is the same step in the running engine, from a torch profile
	// window at this concurrency (nil when none was captured).
	Engine *EngineSplit
}

// EngineSplit is a decode step as the torch profile saw it in the running
// engine: device time per step by category, over a window of Steps steps
// at one concurrency.
type EngineSplit struct {
	Steps                              int
	StepsFrom                          string
	CommMs, GEMMms, AttentionMs, MoEms float64
	OtherMs                            float64
	StepMs                             float64 // device time per step: the parts' sum
}

// RestMs is what the isolated benchmarks' "rest" covers in the engine:
// attention, MoE and other.
func (e EngineSplit) RestMs() float64 { return e.AttentionMs + e.MoEms + e.OtherMs }

// BudgetResult is the decode-time budget at single stream and, when a
// plateau was found, at the plateau's concurrency.
type BudgetResult struct {
	Single  BudgetSplit
	Plateau *BudgetSplit // nil when the sweep has named no plateau
	// ProfileCheck compares with the torch profile's communication share,
	// when a profile was summarised ("" otherwise); the figures follow.
	ProfileCheck  string
	ProfileShare  float64 // communication share of device time, 0..1
	ProfileCommMs float64 // communication per decode step (0 when unknown)
	ProfileStepMs float64 // device time per decode step (0 when unknown)
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
}

func collectBudgetInputs(events []phases.Event) budgetInputs {
	in := budgetInputs{
		levels: map[int]phases.LevelResult{},
		bursts: map[int]phases.NCCLBurst{},
		steps:  map[int]phases.GEMMStep{},
		gemms:  map[int]map[string]phases.GEMMResult{},
		engine: map[int]phases.ProfileSummary{},
		steady: map[int]phases.ProfileSummary{},
	}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.LevelResult:
			if d.Rate == 0 { // closed-loop levels only: C is the batch
				in.levels[d.Concurrency] = d
			}
		case phases.Plateau:
			p := d
			in.plateau = &p
		case phases.NCCLBurst:
			in.bursts[d.M] = d
		case phases.GEMMStep:
			in.steps[d.M] = d
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
				continue
			}
			p := d
			in.profile = &p
			if d.Level > 0 && d.DecodeSteps > 0 && len(d.PerStepUs) > 0 {
				in.engine[d.Level] = d
			}
		}
	}
	return in
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
	return res
}

func (in budgetInputs) split(name string, c int) BudgetSplit {
	b := BudgetSplit{Label: fmt.Sprintf("%s (C=%d)", name, c), Concurrency: c}
	if lv, ok := in.levels[c]; ok && lv.MedianTPOTms > 0 {
		b.TPOTms, b.HasTPOT = lv.MedianTPOTms, true
		b.Sources = append(b.Sources, fmt.Sprintf("TPOT: median of macro level C=%d (%d requests)", c, lv.Completed))
	} else {
		b.Missing = append(b.Missing, fmt.Sprintf("TPOT at C=%d (run the macro sweep with concurrency %d)", c, c))
	}
	if br, ok := in.bursts[c]; ok && br.InStepMs > 0 {
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
		b.GEMMms, b.HasGEMM = sum/1000, true
		b.Sources = append(b.Sources, fmt.Sprintf("GEMM: sum of %d timed GEMMs at M=%d (no per-step total recorded)", len(g), c))
	} else {
		b.Missing = append(b.Missing, fmt.Sprintf("GEMM step sum at M=%d (run the micro phase with M=%d)", c, c))
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

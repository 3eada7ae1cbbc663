package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// BaselineFigures are the baseline's measured figures a prediction starts
// from: its sweep (mean TPOT and output throughput per level), plateau and
// SLO search, and the one budget's decode step, GEMM and prefill parts at
// the plateau.
type BaselineFigures struct {
	Levels  []LevelPoint
	Plateau *phases.Plateau
	Search  *phases.Search
	// At the plateau's level: the budget's prefill part and the GEMM of the
	// decode step (ms per output token), and the mean output tokens.
	PrefillMs, GEMMms, OutputLen float64
	HasBudget                    bool
}

// LevelPoint is one closed-loop level of the baseline's sweep.
type LevelPoint struct {
	C            int
	TokS, TPOTms float64
}

// BaselineOf reads the figures a prediction needs from the baseline's events.
func BaselineOf(events []phases.Event) BaselineFigures {
	s := readSweep(events)
	b := BaselineFigures{Plateau: s.plateau, Search: s.search}
	for c, l := range s.levels {
		if l.MeanTPOTms > 0 && l.OutputThroughput > 0 {
			b.Levels = append(b.Levels, LevelPoint{C: c, TokS: l.OutputThroughput, TPOTms: l.MeanTPOTms})
		}
	}
	sort.Slice(b.Levels, func(i, j int) bool { return b.Levels[i].C < b.Levels[j].C })
	if b.Plateau == nil {
		return b
	}
	if l, ok := s.levels[b.Plateau.Concurrency]; ok && l.Completed > 0 {
		b.OutputLen = float64(l.TotalOutputTokens) / float64(l.Completed)
	}
	for _, l := range Budget(events).Levels {
		if l.Concurrency == b.Plateau.Concurrency && l.Whole != nil {
			b.PrefillMs = l.Whole.GroupMs(GroupPrefill)
			for _, p := range l.Whole.Parts {
				if p.Name == "GEMM" {
					b.GEMMms, b.HasBudget = p.Ms, true
				}
			}
		}
	}
	return b
}

// at interpolates the sweep's mean TPOT and throughput at concurrency c,
// linearly in log C between the levels around it; ok false outside them.
func (b BaselineFigures) at(c float64) (tpot, tokS float64, ok bool) {
	for i := 1; i < len(b.Levels); i++ {
		lo, hi := b.Levels[i-1], b.Levels[i]
		if c >= float64(lo.C) && c <= float64(hi.C) {
			f := math.Log(c/float64(lo.C)) / math.Log(float64(hi.C)/float64(lo.C))
			return lo.TPOTms + f*(hi.TPOTms-lo.TPOTms), lo.TokS + f*(hi.TokS-lo.TokS), true
		}
	}
	if len(b.Levels) > 0 && float64(b.Levels[0].C) == c {
		return b.Levels[0].TPOTms, b.Levels[0].TokS, true
	}
	return 0, 0, false
}

// levelAtLeast is the smallest level of the sweep at or above c (the level
// a sweep of the same ladder finds the plateau at), 0 when none.
func (b BaselineFigures) levelAtLeast(c float64) int {
	for _, l := range b.Levels {
		if float64(l.C) >= c {
			return l.C
		}
	}
	return 0
}

// estimate is the figures being predicted, each with its formula.
type estimate struct {
	tokS, c, tpot1, tpotP, slo phases.Predicted
	model                      []string
}

func fig(v float64, formula string) phases.Predicted {
	return phases.Predicted{Value: v, OK: v > 0, Formula: formula}
}

func nofig(why string) phases.Predicted { return phases.Predicted{Why: why} }

// PredictVariant predicts one variant from the baseline alone
// (baselineLaunch: the baseline's launch line). Each figure is an estimate
// with its formula; a change the model has no rule for is named in
// CannotPredict and leaves the figures unpredicted.
func PredictVariant(b BaselineFigures, baselineLaunch string, spec phases.VariantSpec) phases.VariantPrediction {
	p := phases.VariantPrediction{Variant: spec.Name}
	if len(b.Levels) == 0 {
		p.CannotPredict = "the baseline has no sweep to predict from"
		return p
	}
	var noPlateau string
	if b.Plateau == nil {
		top := b.Levels[len(b.Levels)-1]
		b.Plateau = &phases.Plateau{Concurrency: top.C, OutputThroughput: top.TokS}
		noPlateau = fmt.Sprintf("the baseline's sweep found no plateau: its top level, C=%d, stands for it", top.C)
	}
	bf, vf := launchFlags(baselineLaunch), launchFlags(phases.VariantLaunch(baselineLaunch, spec))
	e := b.unchanged()
	var unknown []string
	chunkDone := false
	for _, f := range flagChanges(bf, vf) {
		switch f {
		case "--max-num-seqs":
			b.applyCap(&e, flagInt(bf, f, b.Plateau.MaxNumSeqs), flagInt(vf, f, 0))
		case "--enable-chunked-prefill", "--no-enable-chunked-prefill":
			if !chunkDone {
				chunkDone = true
				if why := b.applyChunked(&e, chunkedOn(bf), chunkedOn(vf)); why != "" {
					unknown = append(unknown, why)
				}
			}
		case "--data-parallel-size":
			applyDP(&e, flagInt(bf, f, 1), flagInt(vf, f, 1))
		case "--speculative-config":
			unknown = append(unknown, f+" (decode step × (1 + draft cost) / mean accepted length needs an acceptance rate; the baseline measured none)")
		case "--tensor-parallel-size", "--enable-expert-parallel":
			unknown = append(unknown, f+" (the communication part at the new layout needs NCCL figures measured at that size)")
		default:
			unknown = append(unknown, f)
		}
	}
	for name := range spec.Env {
		unknown = append(unknown, "environment "+name)
	}
	sort.Strings(unknown)
	p.PlateauTokS, p.PlateauC, p.TPOTC1Ms, p.TPOTPlateauMs, p.SLOCapacity, p.Model = e.tokS, e.c, e.tpot1, e.tpotP, e.slo, e.model
	if len(unknown) > 0 {
		p.CannotPredict = "no model for " + strings.Join(unknown, ", ") + ": the variant is measured, not predicted"
		why := nofig(p.CannotPredict)
		p.PlateauTokS, p.PlateauC, p.TPOTC1Ms, p.TPOTPlateauMs, p.SLOCapacity = why, why, why, why, why
		return p
	}
	p.Warnings = []string{"predicted from the baseline's sweep and budget alone: an estimate, checked against the variant's own measurements"}
	if noPlateau != "" {
		p.Warnings = append(p.Warnings, noPlateau)
		p.Model = append([]string{noPlateau}, p.Model...)
	}
	return p
}

// unchanged starts every figure at the baseline's own.
func (b BaselineFigures) unchanged() estimate {
	e := estimate{
		tokS: fig(b.Plateau.OutputThroughput, "the baseline's plateau"),
		c:    fig(float64(b.Plateau.Concurrency), "the baseline's plateau"),
	}
	if t, _, ok := b.at(1); ok {
		e.tpot1 = fig(t, "the baseline's mean TPOT at C=1")
	} else {
		e.tpot1 = nofig("the baseline has no level at C=1")
	}
	if t, _, ok := b.at(float64(b.Plateau.Concurrency)); ok {
		e.tpotP = fig(t, "the baseline's mean TPOT at its plateau")
	}
	if b.Search != nil && b.Search.Answer > 0 {
		e.slo = fig(b.Search.Answer, "the baseline's SLO search")
	} else {
		e.slo = nofig("the baseline has no SLO search")
	}
	return e
}

// applyCap predicts a new --max-num-seqs: below the sweep's top the server
// runs at most newCap requests, so its plateau is the baseline's sweep at
// C=newCap (interpolated); above the old cap it helps only when the
// verdict was max_num_seqs, and then the TPOT curve is carried on in a
// straight line from the last two levels.
func (b BaselineFigures) applyCap(e *estimate, oldCap, newCap int) {
	if newCap <= 0 {
		return
	}
	top := b.Levels[len(b.Levels)-1]
	if newCap > oldCap && oldCap > 0 && b.Plateau.Reason != "max_num_seqs" {
		e.model = append(e.model, fmt.Sprintf("--max-num-seqs %d → %d: the plateau's verdict is %s, not max_num_seqs, so a larger cap changes nothing", oldCap, newCap, verdictName(b.Plateau.Reason)))
		return
	}
	served := math.Min(float64(newCap), float64(top.C))
	tpot, tokS, ok := b.at(served)
	how := fmt.Sprintf("the baseline's sweep at C=%g (log-C interpolation)", served)
	if !ok && len(b.Levels) >= 2 {
		lo, hi := b.Levels[len(b.Levels)-2], top
		slope := (hi.TPOTms - lo.TPOTms) / float64(hi.C-lo.C)
		tpot = hi.TPOTms + slope*(served-float64(hi.C))
		tokS = served / tpot * 1000 * b.tokensPerRequestStep()
		how = fmt.Sprintf("TPOT carried on from C=%d and C=%d (%.3f ms per request), throughput C/TPOT", lo.C, hi.C, slope)
	}
	if tpot <= 0 {
		return
	}
	e.tpotP = fig(tpot, how)
	e.tokS = fig(tokS, fmt.Sprintf("%.0f tok/s: at most %d requests run; %s", tokS, newCap, how))
	e.c = fig(float64(b.levelAtLeast(served)), fmt.Sprintf("the sweep's first level at or above %g", served))
	from := fmt.Sprint(oldCap)
	if oldCap <= 0 {
		from = "the server's default"
	}
	e.model = append(e.model, fmt.Sprintf("--max-num-seqs %s → %d: plateau %.0f tok/s, TPOT %.2f ms at the plateau — %s", from, newCap, tokS, tpot, how))
	if b.Search != nil && b.Search.Unit == "concurrency" && b.Search.Answer > float64(newCap) {
		e.slo = fig(float64(newCap), fmt.Sprintf("the baseline's SLO answer %g is above the new cap %d", b.Search.Answer, newCap))
	}
}

// tokensPerRequestStep is 1: each running request gains one token a step
// (no speculation in the baseline).
func (b BaselineFigures) tokensPerRequestStep() float64 { return 1 }

// applyChunked predicts chunked prefill turned on (or off): a whole
// prefill pass reads every weight once more (for an MoE model every
// expert: about the decode step's GEMM at the plateau), and a request's
// tokens wait for C/output-length passes each; chunks riding in the decode
// steps share that read, so the prefill part loses GEMM × C / output length.
func (b BaselineFigures) applyChunked(e *estimate, was, now bool) string {
	if was == now {
		return ""
	}
	if !b.HasBudget || b.OutputLen <= 0 || !e.tpotP.OK {
		return "chunked prefill (the baseline's budget at the plateau has no GEMM or prefill part)"
	}
	c := float64(b.Plateau.Concurrency)
	saved := b.GEMMms * c / b.OutputLen
	if now {
		saved = math.Min(saved, b.PrefillMs)
	} else {
		saved = -saved
	}
	tpot := e.tpotP.Value - saved
	tokS := e.tokS.Value * e.tpotP.Value / tpot
	formula := fmt.Sprintf("TPOT %.2f − GEMM %.2f × C %.0f / output %.0f = %.2f ms; throughput × %.2f/%.2f", e.tpotP.Value, b.GEMMms, c, b.OutputLen, tpot, e.tpotP.Value, tpot)
	e.model = append(e.model, fmt.Sprintf("chunked prefill %s: each whole prefill pass re-reads the weights (the decode step's GEMM at the plateau, %.2f ms); %s", onOff(now), b.GEMMms, formula))
	e.tpotP = fig(tpot, formula)
	e.tokS = fig(tokS, formula)
	return ""
}

// applyDP predicts another data-parallel size: replicas behind one address,
// each with the baseline's curve.
func applyDP(e *estimate, old, now int) {
	r := float64(now) / float64(old)
	e.tokS = fig(e.tokS.Value*r, fmt.Sprintf("%.0f tok/s × %d/%d replicas", e.tokS.Value, now, old))
	e.c = fig(e.c.Value*r, fmt.Sprintf("C %.0f × %d/%d replicas", e.c.Value, now, old))
	if e.slo.OK {
		e.slo = fig(e.slo.Value*r, fmt.Sprintf("%g × %d/%d replicas", e.slo.Value, now, old))
	}
	e.model = append(e.model, fmt.Sprintf("--data-parallel-size %d → %d: each replica as the baseline; TPOT unchanged", old, now))
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func verdictName(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

package report

import (
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// VariantMeasured are a variant's own measured figures; Has names those
// measured (the keys of run --json's errors).
type VariantMeasured struct {
	PlateauTokS, PlateauC, TPOTC1Ms, TPOTPlateauMs, SLOCapacity, JPerToken float64
	// PeakTokS is the sweep's highest output throughput over its levels.
	PeakTokS float64
	Has      map[string]bool
}

// VariantEvents splits a journal's events by variant: "baseline" for those
// before the first variant.started and outside any variant, each variant's
// name for those between its started/finished.
func VariantEvents(events []phases.Event) map[string][]phases.Event {
	out := map[string][]phases.Event{}
	name := phases.Baseline
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.VariantStarted:
			name = d.Spec.Name
			continue
		case phases.VariantFinished:
			name = phases.Baseline
			continue
		}
		out[name] = append(out[name], ev)
	}
	return out
}

// sweepFigures are one sweep's levels (the last of each concurrency,
// closed loop), its plateau and its SLO search's answer.
type sweepFigures struct {
	levels  map[int]phases.LevelResult
	plateau *phases.Plateau
	search  *phases.Search
}

func readSweep(events []phases.Event) sweepFigures {
	s := sweepFigures{levels: map[int]phases.LevelResult{}}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.LevelResult:
			if d.Rate == 0 && d.Completed > 0 {
				s.levels[d.Concurrency] = d
			}
		case phases.Plateau:
			p := d
			s.plateau = &p
		case phases.Search:
			q := d
			s.search = &q
		}
	}
	return s
}

// MeasureVariant reads a variant's own measured figures from its events:
// the sweep's plateau, the mean TPOT at C=1 and at the plateau's level, the
// SLO search's answer.
func MeasureVariant(events []phases.Event) VariantMeasured {
	m := VariantMeasured{Has: map[string]bool{}}
	s := readSweep(events)
	set := func(key string, dst *float64, v float64) {
		if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			*dst, m.Has[key] = v, true
		}
	}
	if s.plateau != nil {
		set("plateau_tok_s", &m.PlateauTokS, s.plateau.OutputThroughput)
		set("plateau_concurrency", &m.PlateauC, float64(s.plateau.Concurrency))
		if l, ok := s.levels[s.plateau.Concurrency]; ok {
			set("tpot_plateau_ms", &m.TPOTPlateauMs, l.MeanTPOTms)
			if l.GPU != nil {
				set("j_per_token", &m.JPerToken, l.GPU.JPerOutputToken) // at the plateau's level
			}
		}
	}
	for _, l := range s.levels {
		if l.OutputThroughput > m.PeakTokS {
			set("peak_tok_s", &m.PeakTokS, l.OutputThroughput)
		}
	}
	if l, ok := s.levels[1]; ok {
		set("tpot_c1_ms", &m.TPOTC1Ms, l.MeanTPOTms)
	}
	if s.search != nil {
		set("slo_capacity", &m.SLOCapacity, s.search.Answer)
	}
	return m
}

// PredictionError is (measured − predicted) / predicted × 100, ok false
// when either side is missing.
func PredictionError(p phases.Predicted, measured float64, measuredOK bool) (pct float64, ok bool) {
	if !p.OK || !measuredOK || p.Value == 0 {
		return 0, false
	}
	return (measured - p.Value) / p.Value * 100, true
}

// SettledBaseline is the baseline's events once the session holds the end
// of its sweep step (events reach the session through a channel: the
// prediction must not read a sweep still in flight), waiting 5 s at most.
func SettledBaseline(sess *Session) []phases.Event {
	deadline := time.Now().Add(5 * time.Second)
	for {
		base := VariantEvents(sess.Events())[phases.Baseline]
		for i := len(base) - 1; i >= 0; i-- {
			if st, ok := base[i].Data.(phases.RunStep); ok && st.Name == "macro" && st.State != phases.StepStarted {
				return base
			}
		}
		if time.Now().After(deadline) {
			return base
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package report

import (
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// VariantMeasured are a variant's own measured figures, those a
// prediction names: the plateau's throughput and concurrency, mean TPOT
// at C=1 and at the plateau (the mean, as the budget splits it), the SLO
// search's answer and the energy per output token at the plateau. Has
// names those measured, by the prediction's JSON keys (plateau_tok_s,
// plateau_concurrency, tpot_c1_ms, tpot_plateau_ms, slo_capacity) and
// j_per_token.
type VariantMeasured struct {
	PlateauTokS   float64 `json:"plateau_tok_s"`
	PlateauC      float64 `json:"plateau_concurrency"`
	TPOTC1Ms      float64 `json:"tpot_c1_ms"`
	TPOTPlateauMs float64 `json:"tpot_plateau_ms"`
	SLOCapacity   float64 `json:"slo_capacity"`
	JPerToken     float64 `json:"j_per_token"`
	// PeakTokS is the sweep's highest output throughput over its levels.
	PeakTokS float64         `json:"peak_tok_s"`
	Has      map[string]bool `json:"has"`
	// Verdict is what the sweep said limits the plateau.
	Verdict string `json:"verdict,omitempty"`
}

// The keys of VariantMeasured.Has.
const (
	KeyPlateauTokS = "plateau_tok_s"
	KeyPlateauC    = "plateau_concurrency"
	KeyTPOTC1      = "tpot_c1_ms"
	KeyTPOTPlateau = "tpot_plateau_ms"
	KeySLOCapacity = "slo_capacity"
	KeyJPerToken   = "j_per_token"
	KeyPeakTokS    = "peak_tok_s"
)

// MeasureVariant reads a variant's own measured figures (plateau tok/s and
// C, TPOT at C=1 and at the plateau, SLO capacity, J/token) from its
// events.
func MeasureVariant(events []phases.Event) VariantMeasured {
	m := VariantMeasured{Has: map[string]bool{}}
	in := collectBudgetInputs(events)
	set := func(key string, dst *float64, v float64) {
		if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			*dst, m.Has[key] = v, true
		}
	}
	if p := in.plateau; p != nil && p.Concurrency > 0 {
		set(KeyPlateauC, &m.PlateauC, float64(p.Concurrency))
		set(KeyPlateauTokS, &m.PlateauTokS, p.OutputThroughput)
		m.Verdict = p.Reason
		if lv, ok := in.levels[p.Concurrency]; ok && !lv.Few() {
			set(KeyTPOTPlateau, &m.TPOTPlateauMs, lv.MeanTPOTms)
			if lv.GPU != nil {
				set(KeyJPerToken, &m.JPerToken, lv.GPU.JPerOutputToken)
			}
		}
	}
	if lv, ok := in.levels[1]; ok && !lv.Few() {
		set(KeyTPOTC1, &m.TPOTC1Ms, lv.MeanTPOTms)
	}
	for _, lv := range in.levels {
		if lv.OutputThroughput > m.PeakTokS {
			set(KeyPeakTokS, &m.PeakTokS, lv.OutputThroughput)
		}
	}
	set(KeySLOCapacity, &m.SLOCapacity, sloAnswer(events))
	return m
}

// sloAnswer is the last finished SLO search's answer, else the largest
// concurrency a sweep's SLO met (0: none).
func sloAnswer(events []phases.Event) float64 {
	search, met := 0.0, 0.0
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.Search:
			if d.Done {
				search = d.Answer
			}
		case phases.SLOMet:
			met = float64(d.MaxConcurrency)
		}
	}
	if search > 0 {
		return search
	}
	return met
}

// PredictionError is (measured − predicted) / predicted × 100, ok false
// when either side is missing.
func PredictionError(p phases.Predicted, measured float64, measuredOK bool) (pct float64, ok bool) {
	if !p.OK || !measuredOK || p.Value == 0 || math.IsNaN(p.Value) || math.IsNaN(measured) {
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

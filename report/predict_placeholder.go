package report

// Placeholder bodies for the variant prediction and measurement functions;
// the prediction model replaces this file with the real ones (same
// signatures).

import "github.com/profdeck/profdeck/phases"

// BaselineFigures are the baseline's figures a prediction needs.
type BaselineFigures struct{}

// VariantMeasured are a variant's own measured figures; Has names those
// measured.
type VariantMeasured struct {
	PlateauTokS, PlateauC, TPOTC1Ms, TPOTPlateauMs, SLOCapacity, JPerToken float64
	Has                                                                    map[string]bool
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

// BaselineOf reads the figures a prediction needs from the baseline's events.
func BaselineOf(events []phases.Event) BaselineFigures { return BaselineFigures{} }

// PredictVariant predicts one variant from the baseline alone.
func PredictVariant(b BaselineFigures, baselineLaunch string, spec phases.VariantSpec) phases.VariantPrediction {
	return phases.VariantPrediction{Variant: spec.Name, CannotPredict: "no prediction model"}
}

// MeasureVariant reads a variant's own measured figures from its events.
func MeasureVariant(events []phases.Event) VariantMeasured {
	return VariantMeasured{Has: map[string]bool{}}
}

// PredictionError is (measured − predicted) / predicted × 100, ok false
// when either side is missing.
func PredictionError(p phases.Predicted, measured float64, measuredOK bool) (pct float64, ok bool) {
	if !p.OK || !measuredOK || p.Value == 0 {
		return 0, false
	}
	return (measured - p.Value) / p.Value * 100, true
}

package headless

import (
	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
)

// runVariant is one variant in `run --json`: what it changes, what was
// predicted before it ran, what it measured, the prediction's error per
// figure (%), and how its turn ended.
type runVariant struct {
	Name       string                    `json:"name"`
	Spec       phases.VariantSpec        `json:"spec"`
	Launch     string                    `json:"launch,omitempty"`
	Prediction *phases.VariantPrediction `json:"prediction,omitempty"`
	Measured   report.VariantMeasured    `json:"measured"`
	Errors     map[string]float64        `json:"errors,omitempty"`
	// Fleet is its GPUs for the campaign's capacity traffic and its cost
	// per million output tokens, measured and predicted.
	Fleet    report.VariantFleet `json:"fleet"`
	State    string              `json:"state"`
	Evidence string              `json:"evidence,omitempty"`
}

// fleetAsk is what the variants' fleet figures need from the campaign.
func fleetAsk(c *campaign.Campaign) report.FleetAsk {
	return report.FleetAsk{Capacity: c.Capacity.Ask(), GPUHour: c.Cost.GPUHour}
}

// runVariants reads the variants from the journal: the last plan's, each
// with its latest prediction, launch and end, and their fleet figures.
func runVariants(events []phases.Event, ask report.FleetAsk) []runVariant {
	var out []runVariant
	idx := map[string]int{}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.VariantPlanned:
			out, idx = planned(d, out, idx)
		case phases.VariantPrediction:
			if i, ok := idx[d.Variant]; ok {
				out[i].Prediction = &d
			}
		case phases.VariantStarted:
			if i, ok := idx[d.Spec.Name]; ok {
				out[i].Launch, out[i].State, out[i].Evidence = d.Launch, phases.StepStarted, ""
			}
		case phases.VariantFinished:
			if i, ok := idx[d.Name]; ok {
				out[i].State, out[i].Evidence = d.State, d.Evidence
			}
		}
	}
	by := report.VariantEvents(events)
	fleets := report.VariantFleets(events, ask)
	for i := range out {
		out[i].Fleet = fleets[out[i].Name]
		out[i].Measured = report.MeasureVariant(by[out[i].Name])
		out[i].Errors = predictionErrors(out[i].Prediction, out[i].Measured)
	}
	return out
}

// planned adds the plan's variants not listed yet, pending.
func planned(p phases.VariantPlanned, out []runVariant, idx map[string]int) ([]runVariant, map[string]int) {
	for _, s := range p.Variants {
		if _, ok := idx[s.Name]; !ok {
			idx[s.Name] = len(out)
			out = append(out, runVariant{Name: s.Name, Spec: s, State: phases.StepPending})
		}
	}
	return out, idx
}

// predictionErrors are (measured − predicted) / predicted × 100 per
// figure, where both sides are there.
func predictionErrors(p *phases.VariantPrediction, m report.VariantMeasured) map[string]float64 {
	if p == nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range []struct {
		key  string
		pred phases.Predicted
		val  float64
	}{
		{"plateau_tok_s", p.PlateauTokS, m.PlateauTokS}, {"plateau_concurrency", p.PlateauC, m.PlateauC},
		{"tpot_c1_ms", p.TPOTC1Ms, m.TPOTC1Ms}, {"tpot_plateau_ms", p.TPOTPlateauMs, m.TPOTPlateauMs},
		{"slo_capacity", p.SLOCapacity, m.SLOCapacity},
	} {
		if pct, ok := report.PredictionError(f.pred, f.val, m.Has[f.key]); ok {
			out[f.key] = pct
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// predictFrom is the run's Predict hook: the prediction of a variant from
// the baseline's events journalled so far.
func predictFrom(sess *report.Session, baselineLaunch string) func(phases.VariantSpec) phases.VariantPrediction {
	return func(spec phases.VariantSpec) phases.VariantPrediction {
		base := report.SettledBaseline(sess)
		return report.PredictVariant(report.BaselineOf(base), baselineLaunch, spec)
	}
}

package report

import (
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
)

// VariantFleet is what a variant costs: the GPUs that serve the
// campaign's capacity traffic (as `capacity` plans it, from the variant's
// own sweep) and the dollars per million output tokens at its plateau
// (a sweep without one: at its highest throughput) with the price of a
// GPU-hour, each measured and predicted. A nil figure is not known.
type VariantFleet struct {
	GPUs                *int     `json:"gpus_for_target,omitempty"`
	GPUsPredicted       *int     `json:"gpus_for_target_predicted,omitempty"`
	USDPerMTok          *float64 `json:"usd_per_m_output_tokens,omitempty"`
	USDPerMTokPredicted *float64 `json:"usd_per_m_output_tokens_predicted,omitempty"`
	// Model says how the predicted figures are reached, as an estimate.
	Model string `json:"model,omitempty"`
}

// FleetAsk is what the fleet figures need: the campaign's capacity
// traffic and the price of a GPU-hour in dollars (0: none).
type FleetAsk struct {
	Capacity *CapacityAsk
	GPUHour  float64
}

// VariantFleets are each variant's fleet figures (the baseline's too),
// by name. Measured: the capacity plan of the variant's own last sweep
// and the cost of its replica's GPUs at its plateau's throughput.
// Predicted: the baseline's plan with one replica's planned rate scaled
// by the predicted plateau throughput over the baseline's measured one,
// on the GPUs the prediction names; the cost the same way.
func VariantFleets(all []phases.Event, ask FleetAsk) map[string]VariantFleet {
	out := map[string]VariantFleet{}
	if ask.Capacity == nil && ask.GPUHour <= 0 {
		return out
	}
	by := VariantEvents(all)
	baseSweep, ok := lastSweep(phases.Baseline, by[phases.Baseline], 0)
	if !ok {
		return out
	}
	base := MeasureVariant(by[phases.Baseline])
	basePlan := fleetPlan(baseSweep, ask.Capacity)
	baseGPUs := replicaGPUs(baseSweep, basePlan)
	out[phases.Baseline] = measuredFleet(base, basePlan, baseGPUs, ask.GPUHour)
	for _, r := range variantRows(all) {
		var f VariantFleet
		if sw, ok := lastSweep(r.spec.Name, by[r.spec.Name], baseSweep.HostGPUs); ok {
			plan := fleetPlan(sw, ask.Capacity)
			f = measuredFleet(MeasureVariant(by[r.spec.Name]), plan, replicaGPUs(sw, plan), ask.GPUHour)
		}
		if r.pred != nil {
			predictFleet(&f, *r.pred, base, basePlan, baseGPUs, ask.GPUHour)
		}
		out[r.spec.Name] = f
	}
	return out
}

// lastSweep is a variant's last sweep with levels; one without a
// deployment or GPU count of its own is on the baseline's host's GPUs.
func lastSweep(name string, events []phases.Event, hostGPUs int) (Sweep, bool) {
	c := classify(events)
	runs := c.runs[phases.Macro]
	for i := len(runs) - 1; i >= 0; i-- {
		if sw := journalSweep(name, c, i); len(sw.Levels) > 0 {
			if sw.HostGPUs == 0 && sw.Deployment == nil {
				sw.HostGPUs = hostGPUs
			}
			return sw, true
		}
	}
	return Sweep{}, false
}

// fleetPlan is the capacity plan of a sweep (nil: none asked or none
// given).
func fleetPlan(sw Sweep, ask *CapacityAsk) *CapacityPlan {
	if ask == nil {
		return nil
	}
	p, err := PlanCapacity(sw, *ask)
	if err != nil || p.GPUs == nil || p.Replica == nil || p.Replica.PlannedRequestRate <= 0 {
		return nil
	}
	return p
}

// replicaGPUs are the GPUs of one replica: the plan's, else the sweep's.
func replicaGPUs(sw Sweep, p *CapacityPlan) int {
	switch {
	case p != nil && p.Deployment != nil:
		return p.Deployment.GPUs
	case sw.Deployment != nil:
		return sw.Deployment.ReplicaGPUs()
	}
	return sw.HostGPUs
}

func measuredFleet(m VariantMeasured, p *CapacityPlan, gpus int, gpuHour float64) VariantFleet {
	var f VariantFleet
	if p != nil {
		f.GPUs = p.GPUs
	}
	tokS, ok := plateauTokS(m)
	if c, ok := perMTok(gpuHour, gpus, tokS, ok); ok {
		f.USDPerMTok = &c
	}
	return f
}

// predictFleet adds the predicted figures from the prediction's plateau
// throughput and GPUs against the baseline's.
func predictFleet(f *VariantFleet, p phases.VariantPrediction, base VariantMeasured, basePlan *CapacityPlan, baseGPUs int, gpuHour float64) {
	baseTokS, ok := plateauTokS(base)
	if !p.PlateauTokS.OK || p.PlateauTokS.Value <= 0 || !ok {
		return
	}
	gpus := baseGPUs
	if p.GPUs > 0 {
		gpus = p.GPUs
	}
	ratio := p.PlateauTokS.Value / baseTokS
	if basePlan != nil && gpus > 0 {
		need := basePlan.Traffic.RequestRate / (basePlan.Replica.PlannedRequestRate * ratio)
		if need > 0 && need < maxReplicas {
			n := max(int(math.Ceil(need-1e-9)), 1)
			g := n * gpus
			f.GPUsPredicted = &g
			f.Model = fmt.Sprintf("GPUs: %.3g req/s over one replica's planned %.3g req/s × %.0f/%.0f tok/s (the predicted plateau over the baseline's) = %d replica(s) × %d GPUs",
				basePlan.Traffic.RequestRate, basePlan.Replica.PlannedRequestRate, p.PlateauTokS.Value, baseTokS, n, gpus)
		}
	}
	if c, ok := perMTok(gpuHour, gpus, p.PlateauTokS.Value, true); ok {
		f.USDPerMTokPredicted = &c
		if f.Model != "" {
			f.Model += "; "
		}
		f.Model += fmt.Sprintf("cost: $%.4g per GPU-hour × %d GPUs ÷ (%.0f tok/s × 3600) × 10⁶", gpuHour, gpus, p.PlateauTokS.Value)
	}
}

// plateauTokS is the plateau's output throughput; a sweep without a
// plateau: its highest, the top level standing for the plateau.
func plateauTokS(m VariantMeasured) (float64, bool) {
	if m.Has[KeyPlateauTokS] {
		return m.PlateauTokS, true
	}
	return m.PeakTokS, m.Has[KeyPeakTokS]
}

// perMTok is the dollars per million output tokens of gpus GPUs at a
// throughput.
func perMTok(gpuHour float64, gpus int, tokS float64, ok bool) (float64, bool) {
	if gpuHour <= 0 || gpus <= 0 || !ok || tokS <= 0 {
		return 0, false
	}
	return gpuHour * float64(gpus) / (tokS * 3600) * 1e6, true
}

// figures are the fleet's two cells as the variants table shows
// them: measured (predicted, error).
func (f VariantFleet) figures() (gpus, cost string) {
	g, gok := deref(intFloat(f.GPUs))
	c, cok := deref(f.USDPerMTok)
	return VariantFigure(predictedOf(intFloat(f.GPUsPredicted)), g, gok), VariantFigure(predictedOf(f.USDPerMTokPredicted), c, cok)
}

func intFloat(p *int) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func predictedOf(p *float64) phases.Predicted {
	if p == nil {
		return phases.Predicted{}
	}
	return phases.Predicted{Value: *p, OK: true}
}

func deref(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

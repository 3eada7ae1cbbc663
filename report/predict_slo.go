package report

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// sloCapacity predicts the SLO search's answer from the predicted TPOT
// curve: each sweep level's TPOT percentile (the one the SLO's share
// reads: p99 from 95%, p90 from 75%, else the median) × the level's
// predicted over measured mean TPOT, read where it crosses the SLO's TPOT
// bound (linear between the last level under it and the first over).
// Anchored on the search: its answer × the predicted crossing over the
// baseline's own crossing on the same levels, where the baseline's levels
// cross it; else the predicted crossing itself. Only a TPOT bound is
// predicted; a search in req/s is not.
func (pr *predictor) sloCapacity() phases.Predicted {
	s := pr.b.Search
	if s == nil {
		return phases.Predicted{Why: "the baseline ran no SLO search to predict (macro search)"}
	}
	if s.Mode != phases.SearchConcurrency {
		return phases.Predicted{Why: "the baseline's SLO search was in req/s: the model predicts the closed loop's levels"}
	}
	bounds, err := macro.ParseSLOBounds(s.SLO)
	if err != nil || bounds.TPOT <= 0 {
		return phases.Predicted{Why: fmt.Sprintf("the SLO %q bounds no TPOT: the model predicts TPOT, not TTFT or E2EL", s.SLO)}
	}
	bound := float64(bounds.TPOT.Microseconds()) / 1000
	name, pct := tpotPercentile(bounds.Share)
	var cs, meas, pred []float64
	for _, p := range pr.curve {
		q := pct(p.ref)
		if q <= 0 || p.refTPOT <= 0 {
			continue
		}
		cs = append(cs, float64(p.ref.C))
		meas = append(meas, q)
		pred = append(pred, q*p.tpot()/p.refTPOT)
	}
	capV, capOK, above := crossing(cs, pred, bound)
	if !capOK {
		return phases.Predicted{Why: fmt.Sprintf("no level of the baseline's sweep is predicted under the SLO's TPOT bound (%s ≤ %.1f ms)", name, bound)}
	}
	formula := fmt.Sprintf("%s TPOT predicted at the sweep's levels crosses %.1f ms at C=%.1f", name, bound, capV)
	if above {
		formula = fmt.Sprintf("%s TPOT predicted under %.1f ms up to the sweep's top, C=%.0f: at least that", name, bound, capV)
	}
	v := capV
	if capB, ok, aboveB := crossing(cs, meas, bound); ok && !aboveB && !above && s.Answer > 0 && capB > 0 {
		v = s.Answer * capV / capB
		formula = fmt.Sprintf("the search's C=%.0f × %.1f/%.1f (%s; the baseline's own levels cross at C=%.1f)", s.Answer, capV, capB, formula, capB)
	}
	if bounds.TTFT > 0 || bounds.E2EL > 0 {
		formula += "; the SLO's TTFT and E2EL bounds are not predicted: the TPOT bound alone"
	}
	if pr.dp != 1 {
		v *= pr.dp
		formula += fmt.Sprintf(", × %.2f replicas", pr.dp)
	}
	return estimate(v, s.Answer, formula)
}

// tpotPercentile is the TPOT percentile a share of requests reads.
func tpotPercentile(share float64) (string, func(BaselineLevel) float64) {
	switch {
	case share >= 0.95:
		return "p99", func(l BaselineLevel) float64 { return l.P99TPOTms }
	case share >= 0.75:
		return "p90", func(l BaselineLevel) float64 { return l.P90TPOTms }
	}
	return "median", func(l BaselineLevel) float64 { return l.MedianTPOTms }
}

// crossing is where a curve over cs first rises past bound: linear
// between the last point under it and the first over; above when every
// point is under it (the top's C); ok false when none is.
func crossing(cs, vs []float64, bound float64) (c float64, ok, above bool) {
	if len(cs) == 0 || vs[0] > bound {
		return 0, false, false
	}
	for i := 1; i < len(cs); i++ {
		if vs[i] > bound {
			return lerp(bound, vs[i-1], cs[i-1], vs[i], cs[i]), true, false
		}
	}
	return cs[len(cs)-1], true, true
}

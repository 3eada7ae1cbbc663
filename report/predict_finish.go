package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// The prediction's stated uncertainty: noiseFloorPct, the spread of the
// same launch measured twice (a few percent on the rig's H200), plus
// changeShare of the change the model predicts against the measured
// figure it starts from: a first-order model is trusted to within half
// the effect it predicts.
const (
	noiseFloorPct = 5.0
	changeShare   = 0.5
	maxUncertain  = 100.0
)

// uncertainty is ± percent of pred, predicted from the measured ref.
func uncertainty(pred, ref float64) float64 {
	if pred <= 0 {
		return maxUncertain
	}
	return math.Min(maxUncertain, noiseFloorPct+100*changeShare*math.Abs(pred-ref)/pred)
}

// estimate is a predicted figure from the measured ref, its formula with
// its stated uncertainty (more by extra percent).
func estimate(v, ref float64, formula string, extra ...float64) phases.Predicted {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return phases.Predicted{Why: "the model gave no positive figure: " + formula}
	}
	u := uncertainty(v, ref)
	for _, x := range extra {
		u = math.Min(maxUncertain, u+x)
	}
	return phases.Predicted{Value: v, OK: true, Uncertainty: u, Formula: fmt.Sprintf("%s (estimate, ±%.0f%%)", formula, u)}
}

// finish computes the figures from the points.
func (pr *predictor) finish(out phases.VariantPrediction) phases.VariantPrediction {
	b := pr.b
	out.GPUs = int(math.Round(pr.gpus))
	out.PlateauC = phases.Predicted{Value: pr.platC * pr.dp, OK: true,
		Formula: fmt.Sprintf("C=%.0f: %s (a level of the baseline's sweep: estimate, one level either way)", pr.platC*pr.dp, pr.platCText())}
	if pr.noTPOT != "" {
		out.CannotPredict = pr.noTPOT
		for _, f := range []*phases.Predicted{&out.TPOTC1Ms, &out.TPOTPlateauMs, &out.PlateauTokS, &out.SLOCapacity} {
			f.Why = pr.noTPOT
		}
	} else {
		out.TPOTC1Ms = phases.Predicted{Why: "the baseline's sweep has no level at C=1"}
		if pr.hasC1 {
			out.TPOTC1Ms = estimate(pr.c1.tpot(), pr.c1.refTPOT, tpotFormula(pr.c1))
		}
		x := pr.unsplit(pr.plat)
		out.TPOTPlateauMs = estimate(pr.plat.tpot(), pr.plat.refTPOT, tpotFormula(pr.plat), x)
		// The replicas scale the throughput by themselves: the
		// uncertainty is of the change within one.
		out.PlateauTokS = estimate(pr.plat.tokS(), pr.plat.ref.TokS*pr.plat.replicas, tokSFormula(pr.plat), x)
		out.SLOCapacity = pr.sloCapacity()
	}
	if len(pr.cannot) > 0 {
		out.CannotPredict = strings.Join(append(pr.cannot, out.CannotPredict), "; ")
		out.CannotPredict = strings.TrimSuffix(out.CannotPredict, "; ")
	}
	head := fmt.Sprintf("from the baseline's measurements: plateau C=%d at %.0f tok/s (verdict %s); GPUs %d → %d",
		b.PlateauC, b.PlateauTokS, orNone(b.Verdict), int(math.Round(pr.gpus0())), out.GPUs)
	out.Model = append([]string{head}, pr.lines...)
	out.Warnings = append([]string{fmt.Sprintf("every figure is an estimate: ±%.0f%% (the spread of the same launch measured twice) + half the change the model predicts", noiseFloorPct)}, pr.warnings...)
	return out
}

// gpus0 is the baseline's GPUs: TP × DP of its launch.
func (pr *predictor) gpus0() float64 {
	return max(float64(pr.b.TP), 1) * max(flagFloat(pr.base, "data-parallel-size"), 1)
}

// platCText says where the plateau's C comes from.
func (pr *predictor) platCText() string {
	s := fmt.Sprintf("the baseline's plateau C=%d", pr.b.PlateauC)
	if pr.platC != float64(pr.b.PlateauC) {
		s = fmt.Sprintf("the first sweep level whose clients fill %.0f seats", pr.newCap)
	}
	if pr.dp != 1 {
		s += fmt.Sprintf(", × %.2f replicas", pr.dp)
	}
	return s
}

// tpotFormula is a point's TPOT written out.
func tpotFormula(p point) string {
	spec := ""
	if p.spec != 1 {
		spec = fmt.Sprintf(" × %.3f (speculation)", p.spec)
	}
	return fmt.Sprintf("decode step %.2f ms at batch %.0f%s + prefills %.2f ms + the rest %.2f ms (as measured) = %.2f ms, from %.2f ms measured at C=%d",
		p.parts.sum(), p.batch, spec, p.prefill, tidy(p.rest), p.tpot(), p.refTPOT, p.ref.C)
}

// tokSFormula is a point's throughput written out.
func tokSFormula(p point) string {
	rep := ""
	if p.replicas != 1 {
		rep = fmt.Sprintf(" × %.2f replicas", p.replicas)
	}
	if n := p.ref.OutputLen - 1; p.seated && n > 0 && p.ref.MeanTTFTms > 0 {
		return fmt.Sprintf("%.0f tok/s at C=%d × %.0f/%d clients × E2EL %.0f/%.0f ms (mean TTFT %.0f ms × %.2f + %.0f tokens × TPOT %.2f → %.2f ms)%s = %.0f tok/s",
			p.ref.TokS, p.ref.C, p.clients, p.ref.C, p.ref.MeanTTFTms+n*p.refTPOT, p.ref.MeanTTFTms*p.ttft+n*p.tpot(),
			p.ref.MeanTTFTms, p.ttft, n, p.refTPOT, p.tpot(), rep, p.tokS())
	}
	return fmt.Sprintf("%.0f tok/s at C=%d × %.0f/%.0f requests decoding × TPOT %.2f/%.2f ms%s = %.0f tok/s (the seats full, a queue waiting)",
		p.ref.TokS, p.ref.C, p.batch, p.refBatch, p.refTPOT, p.tpot(), rep, p.tokS())
}

// tidy is x without the sign of a rounding error ("-0.00").
func tidy(x float64) float64 {
	if math.Abs(x) < 0.005 {
		return 0
	}
	return x
}

// unsplit is the uncertainty a point adds when the budget did not split
// its step whole and its batch changed: the rest, kept as measured at the
// reference's batch, may move with it (half of it, as a change).
func (pr *predictor) unsplit(p point) float64 {
	if p.batch == p.refBatch || (!pr.b.partial() && len(pr.b.splits()) > 0) || p.tpot() <= 0 {
		return 0
	}
	return 100 * changeShare * math.Abs(p.rest) / p.tpot()
}

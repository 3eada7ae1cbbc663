package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// point is one closed-loop level as the variant would run it, made from
// one level of the baseline (ref): the decode step's parts at its batch,
// the prefills a running request waits for per output token, and what
// the baseline's parts left of its mean TPOT (kept as measured). Its
// throughput is the reference's, scaled by the requests decoding and by
// how much sooner each token comes.
type point struct {
	clients  float64
	batch    float64
	parts    stepParts
	prefill  float64
	rest     float64
	ref      BaselineLevel
	refBatch float64
	refTPOT  float64
	// spec is the decode step's factor under speculation ((1 + draft
	// cost) / mean accepted length; 1 without); replicas the data-parallel
	// replicas against the baseline's.
	spec, replicas float64
	// promptPerToken and promptPerStep are the prompt tokens a running
	// request waits for per output token and those a decode step carries.
	promptPerToken, promptPerStep float64
	mixed                         bool
	// seated: every client holds a seat (no queue for --max-num-seqs);
	// ttft is the mean TTFT's factor against the reference's.
	seated bool
	ttft   float64
}

func (p point) tpot() float64 { return p.parts.sum()*p.spec + p.prefill + p.rest }

// tokS is the output throughput, anchored on the reference's measured
// one. Every client seated, a closed loop's C × output tokens ÷ E2EL
// (mean TTFT + (output − 1) × mean TPOT): the reference's × C/C_ref ×
// E2EL_ref/E2EL. With a queue for the seats, the seats' tokens: the
// reference's × batch/refBatch × refTPOT/TPOT. Both × the replicas.
func (p point) tokS() float64 {
	if n := p.ref.OutputLen - 1; p.seated && n > 0 && p.ref.MeanTTFTms > 0 {
		e0 := p.ref.MeanTTFTms + n*p.refTPOT
		e1 := p.ref.MeanTTFTms*p.ttft + n*p.tpot()
		return p.ref.TokS * (p.clients / float64(p.ref.C)) * (e0 / e1) * p.replicas
	}
	return p.ref.TokS * (p.batch / p.refBatch) * (p.refTPOT / p.tpot()) * p.replicas
}

// predictor is one variant's prediction as it is made: the baseline, the
// changes, the points the models rewrite, and what it says.
type predictor struct {
	b          BaselineFigures
	changes    []flagChange
	base, next launchFlags
	oldCap     float64
	newCap     float64
	platC      float64
	c1, plat   point
	hasC1      bool // the baseline's sweep has a level at C=1
	curve      []point
	gpus       float64
	dp         float64 // data-parallel replicas against the baseline's
	lines      []string
	warnings   []string
	cannot     []string
	// noTPOT says why the TPOT (and the throughput) cannot be predicted.
	noTPOT string
}

func (pr *predictor) line(format string, a ...any) {
	pr.lines = append(pr.lines, fmt.Sprintf(format, a...))
}
func (pr *predictor) warn(format string, a ...any) {
	pr.warnings = append(pr.warnings, fmt.Sprintf(format, a...))
}

// each applies f to every point: single stream, the plateau, the curve.
func (pr *predictor) each(f func(p *point)) {
	if pr.hasC1 {
		f(&pr.c1)
	}
	f(&pr.plat)
	for i := range pr.curve {
		f(&pr.curve[i])
	}
}

// PredictVariant predicts one variant from the baseline alone
// (baselineLaunch: the baseline's launch line): its flag changes against
// that launch, each through its model, every figure an estimate with its
// formula, inputs and uncertainty.
func PredictVariant(b BaselineFigures, baselineLaunch string, spec phases.VariantSpec) phases.VariantPrediction {
	out := phases.VariantPrediction{Variant: spec.Name}
	changes, next := launchChanges(baselineLaunch, spec)
	pr := &predictor{b: b, changes: changes, base: parseFlags(splitLaunch(baselineLaunch)), next: next}
	for _, name := range envNames(spec.Env) {
		pr.cannot = append(pr.cannot, fmt.Sprintf("the environment variable %s: its effect is not modelled", name))
	}
	if why := pr.start(); why != "" {
		return notPredicted(out, why)
	}
	known := pr.apply()
	if known == 0 && len(pr.cannot) > 0 {
		return notPredicted(out, strings.Join(pr.cannot, "; "))
	}
	for _, c := range pr.cannot {
		pr.warn("assumed to change nothing: %s", c)
	}
	return pr.finish(out)
}

// notPredicted is a prediction with every figure left out, for why.
func notPredicted(p phases.VariantPrediction, why string) phases.VariantPrediction {
	p.CannotPredict = why
	for _, f := range []*phases.Predicted{&p.PlateauTokS, &p.PlateauC, &p.TPOTC1Ms, &p.TPOTPlateauMs, &p.SLOCapacity} {
		f.Why = why
	}
	return p
}

// start reads the baseline's plateau and caps and makes the points
// before any model: "" or why nothing can be predicted.
func (pr *predictor) start() string {
	b := pr.b
	if b.PlateauC <= 0 || len(b.Levels) == 0 {
		return "the baseline has no sweep with a plateau to predict from (run the macro step before the variants)"
	}
	_, pr.hasC1 = b.level(1)
	if b.NoPlateau != "" {
		pr.warn("%s", b.NoPlateau)
		pr.line("%s", b.NoPlateau)
	}
	pr.oldCap = float64(b.MaxNumSeqs)
	if pr.oldCap == 0 {
		pr.oldCap = flagFloat(pr.base, "max-num-seqs")
	}
	if pr.oldCap == 0 {
		pr.oldCap = math.Inf(1)
	}
	pr.newCap, pr.platC, pr.dp = pr.oldCap, float64(b.PlateauC), 1
	pr.gpus = float64(max(b.TP, 1))
	if n := flagFloat(pr.base, "data-parallel-size"); n > 1 {
		pr.gpus *= n
	}
	return ""
}

// flagFloat is a flag's numeric value (0 when not set or not a number).
func flagFloat(f launchFlags, name string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(f[name]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// apply runs the models of the changes, the seats first (they choose the
// points), and counts the changes it modelled.
func (pr *predictor) apply() (known int) {
	pr.caps()
	pr.points()
	order := []struct {
		names []string
		model func()
	}{
		{[]string{"enable-chunked-prefill", "no-enable-chunked-prefill", "chunked-prefill", "max-num-batched-tokens"}, pr.chunked},
		{[]string{"tensor-parallel-size"}, pr.tensorParallel},
		{[]string{"enable-expert-parallel", "no-enable-expert-parallel"}, pr.expertParallel},
		{[]string{"quantization", "kv-cache-dtype"}, pr.quantization},
		{[]string{"speculative-config"}, pr.speculative},
		{[]string{"data-parallel-size"}, pr.dataParallel},
	}
	modelled := map[string]bool{"max-num-seqs": true}
	for _, o := range order {
		if pr.changed(o.names...) {
			o.model()
		}
		for _, n := range o.names {
			modelled[n] = true
		}
	}
	for _, c := range pr.changes {
		switch {
		case modelled[c.Name]:
			known++
		case isNeutral(c.Name):
			pr.line("%s: where and how the server answers, no effect on the figures", c)
		default:
			pr.cannot = append(pr.cannot, fmt.Sprintf("%s: not modelled", c))
		}
	}
	if len(pr.changes) == 0 && len(pr.cannot) == 0 {
		pr.line("no flag differs from the baseline's launch: the baseline's own figures, as measured")
	}
	return known
}

// changed reports whether the variant changes any of the flags.
func (pr *predictor) changed(names ...string) bool {
	for _, c := range pr.changes {
		for _, n := range names {
			if c.Name == n {
				return true
			}
		}
	}
	return false
}

// cantTPOT records why the TPOT cannot be predicted (the first reason).
func (pr *predictor) cantTPOT(why string) {
	if pr.noTPOT == "" {
		pr.noTPOT = why
	}
}

package macro

import (
	"context"
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
)

// repeated are the figures a repeated level reports as means with their
// 95% confidence intervals.
var repeated = []struct {
	name string
	f    func(*phases.LevelResult) *float64
}{
	{"output_throughput", func(l *phases.LevelResult) *float64 { return &l.OutputThroughput }},
	{"request_throughput", func(l *phases.LevelResult) *float64 { return &l.RequestThroughput }},
	{"median_ttft_ms", func(l *phases.LevelResult) *float64 { return &l.MedianTTFTms }},
	{"p99_ttft_ms", func(l *phases.LevelResult) *float64 { return &l.P99TTFTms }},
	{"median_tpot_ms", func(l *phases.LevelResult) *float64 { return &l.MedianTPOTms }},
	{"p99_tpot_ms", func(l *phases.LevelResult) *float64 { return &l.P99TPOTms }},
	{"mean_itl_ms", func(l *phases.LevelResult) *float64 { return &l.MeanITLms }},
	{"median_e2el_ms", func(l *phases.LevelResult) *float64 { return &l.MedianE2ELms }},
}

// tTable is Student's t for a two-sided 95% interval, by degrees of
// freedom 1…30; past 30 the normal 1.96 is near enough.
var tTable = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// MeanCI95 is the mean of xs and the half-width of its 95% confidence
// interval (0 for fewer than two values).
func MeanCI95(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := 1.96
	if n-1 <= len(tTable) {
		t = tTable[n-2]
	}
	return mean, t * sd / math.Sqrt(float64(n))
}

// runRepeated runs a level Config.Repeat times and reports it once, each
// figure the mean of its runs.
func (r *runner) runRepeated(ctx context.Context, conc int, rate float64) (*phases.LevelResult, error) {
	var runs []*phases.LevelResult
	n := max(r.cfg.Repeat, 1)
	defer func() { r.run, r.runs = 0, 0 }()
	for k := 0; k < n; k++ {
		if n > 1 {
			r.run, r.runs = k+1, n
		}
		lr, err := r.runLevel(ctx, conc, rate)
		if lr != nil {
			runs = append(runs, lr)
		}
		if err != nil {
			return combineRuns(runs), err
		}
		if _, stopping, _ := r.s.state(); stopping {
			break
		}
	}
	return combineRuns(runs), nil
}

// combineRuns is one level from its runs: counts summed, figures the means
// of the runs that completed requests, the rest (server, audit, notes)
// from the last run with a note.
func combineRuns(runs []*phases.LevelResult) *phases.LevelResult {
	if len(runs) == 0 {
		return nil
	}
	if len(runs) == 1 && runs[0].Repeats == nil {
		return runs[0]
	}
	out := *runs[len(runs)-1]
	out.Completed, out.Failed, out.TotalInputTokens, out.TotalOutputTokens = 0, 0, 0, 0
	out.Failures = map[string]int{}
	var ok []*phases.LevelResult
	for _, lr := range runs {
		out.Completed += lr.Completed
		out.Failed += lr.Failed
		out.TotalInputTokens += lr.TotalInputTokens
		out.TotalOutputTokens += lr.TotalOutputTokens
		for k, v := range lr.Failures {
			out.Failures[k] += v
		}
		out.EventsPerRead = max(out.EventsPerRead, lr.EventsPerRead) // the most bunched run
		out.ClientBound = out.ClientBound || lr.ClientBound
		if lr.ClientBound && out.ClientBoundReason == "" {
			out.ClientBoundReason = lr.ClientBoundReason
		}
		if lr.Completed > 0 {
			ok = append(ok, lr)
		}
	}
	out.Goodput = sumGoodput(runs)
	rep := &phases.Repeats{N: len(runs), Mean: map[string]float64{}, CI95: map[string]float64{}}
	for _, lr := range runs {
		rep.Runs = append(rep.Runs, lr.OutputThroughput)
	}
	for _, fig := range repeated {
		xs := make([]float64, 0, len(ok))
		for _, lr := range ok {
			xs = append(xs, *fig.f(lr))
		}
		m, h := MeanCI95(xs)
		rep.Mean[fig.name], rep.CI95[fig.name] = m, h
		*fig.f(&out) = m
	}
	out.Repeats = rep
	out.Notes = append(append([]string(nil), out.Notes...),
		fmt.Sprintf("%d runs: figures are their means; output %.1f ± %.1f tok/s (95%% CI); server and audit from the last run",
			len(runs), rep.Mean["output_throughput"], rep.CI95["output_throughput"]))
	return &out
}

// noise says whether a plateau decided on the means is inside the noise:
// with the intervals, the next level could add 10% or more.
func noise(levels []phases.LevelResult, p *phases.Plateau) string {
	for i := 0; i+1 < len(levels); i++ {
		a, b := levels[i], levels[i+1]
		if a.Concurrency != p.Concurrency || a.Repeats == nil || b.Repeats == nil {
			continue
		}
		ca, cb := a.Repeats.CI95["output_throughput"], b.Repeats.CI95["output_throughput"]
		if b.OutputThroughput+cb >= 1.10*(a.OutputThroughput-ca) {
			return fmt.Sprintf("inside the noise: C=%d gives %.0f ± %.0f tok/s against %.0f ± %.0f at C=%d (95%% CI), "+
				"so it may add 10%% or more — more runs (--repeat) would settle it",
				b.Concurrency, b.OutputThroughput, cb, a.OutputThroughput, ca, a.Concurrency)
		}
		return ""
	}
	return ""
}

// sumGoodput is the goodput over all runs: good requests summed, the share
// over all requests, the goodputs the runs' means.
func sumGoodput(runs []*phases.LevelResult) *phases.Goodput {
	var g phases.Goodput
	n, all := 0, 0
	g.Met = true
	for _, lr := range runs {
		if lr.Goodput == nil {
			return nil
		}
		g.Good += lr.Goodput.Good
		g.RequestGoodput += lr.Goodput.RequestGoodput
		g.TokenGoodput += lr.Goodput.TokenGoodput
		g.Met = g.Met && lr.Goodput.Met
		all += lr.Completed + lr.Failed
		n++
	}
	if all > 0 {
		g.Share = float64(g.Good) / float64(all)
	}
	g.RequestGoodput /= float64(n)
	g.TokenGoodput /= float64(n)
	return &g
}

package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// judge says whether a level met the SLO, and by how much it missed.
type judge struct {
	b       macro.SLOBounds
	goodput bool
	bounds  []bound
}

// bound is one figure's bound and the percentile it is judged on.
type bound struct {
	metric string // ttft, tpot, e2el
	limit  time.Duration
	q      float64 // the percentile judged, e.g. 90
}

func (b bound) key() string {
	return "p" + strconv.FormatFloat(b.q, 'g', -1, 64) + "_" + b.metric + "_ms"
}

// newJudge picks, for each bounded figure, the percentile at the SLO's
// share (the smallest recorded one at or above it when the sweep lacks it).
func newJudge(b macro.SLOBounds, goodput bool, levels []phases.LevelResult, warn func(string, ...any)) *judge {
	j := &judge{b: b, goodput: goodput}
	q := 100 * b.Share
	for _, m := range []struct {
		name  string
		limit time.Duration
	}{{"ttft", b.TTFT}, {"tpot", b.TPOT}, {"e2el", b.E2EL}} {
		if m.limit <= 0 {
			continue
		}
		got := pickPercentile(m.name, q, levels)
		switch {
		case goodput:
		case got > q:
			warn("the sweep recorded no p%g of %s: judged on p%g, a stricter figure", q, strings.ToUpper(m.name), got)
		case got < q:
			warn("the sweep recorded no p%g of %s: judged on p%g, a LOOSER figure than the SLO asks (sweep with --metric-percentiles %g)",
				q, strings.ToUpper(m.name), got, q)
		}
		j.bounds = append(j.bounds, bound{metric: m.name, limit: m.limit, q: got})
	}
	return j
}

// pickPercentile is q when every level has it, else the smallest recorded
// percentile above q, else p99.
func pickPercentile(metric string, q float64, levels []phases.LevelResult) float64 {
	has := func(p float64) bool {
		if p == 50 || p == 90 || p == 99 {
			return true
		}
		k := bound{metric: metric, q: p}.key()
		for _, l := range levels {
			if _, ok := l.Percentiles[k]; !ok {
				return false
			}
		}
		return len(levels) > 0
	}
	if has(q) {
		return q
	}
	best := math.Inf(1)
	for _, p := range []float64{50, 90, 99} {
		if p > q && p < best {
			best = p
		}
	}
	for k := range levels[0].Percentiles {
		if p, ok := percentileOf(k, metric); ok && p > q && p < best && has(p) {
			best = p
		}
	}
	if math.IsInf(best, 1) {
		return 99
	}
	return best
}

// percentileOf reads p95 from p95_ttft_ms when the key is metric's.
func percentileOf(key, metric string) (float64, bool) {
	s, ok := strings.CutSuffix(key, "_"+metric+"_ms")
	if !ok || !strings.HasPrefix(s, "p") {
		return 0, false
	}
	p, err := strconv.ParseFloat(s[1:], 64)
	return p, err == nil
}

// figure is a level's percentile q of metric, in ms.
func figure(l phases.LevelResult, metric string, q float64) float64 {
	type fixed struct{ p50, p90, p99 float64 }
	var f fixed
	switch metric {
	case "ttft":
		f = fixed{l.MedianTTFTms, l.P90TTFTms, l.P99TTFTms}
	case "tpot":
		f = fixed{l.MedianTPOTms, l.P90TPOTms, l.P99TPOTms}
	case "e2el":
		f = fixed{l.MedianE2ELms, l.P90E2ELms, l.P99E2ELms}
	}
	switch q {
	case 50:
		return f.p50
	case 90:
		return f.p90
	case 99:
		return f.p99
	}
	return l.Percentiles[bound{metric: metric, q: q}.key()]
}

// point judges one level: on the sweep's goodput when the plan reads it,
// else on each bound's percentile; the percentile reading is kept either
// way, since it is what interpolates between levels (a share of good
// requests jumps from all to few, a percentile grows with the load).
func (j *judge) point(l phases.LevelResult, unit string) CurvePoint {
	pt := CurvePoint{Load: loadOf(l, unit), RequestThroughput: l.RequestThroughput, OutputThroughput: l.OutputThroughput,
		MeanE2ELms: l.MeanE2ELms, Figures: map[string]float64{}, Few: l.Few(), Client: l.ClientBound}
	pt.pexcess, pt.pwhy = math.Inf(-1), ""
	for _, b := range j.bounds {
		v := figure(l, b.metric, b.q)
		lim := float64(b.limit) / float64(time.Millisecond)
		pt.Figures[b.key()] = v
		if e := v/lim - 1; e > pt.pexcess {
			pt.pexcess = e
			pt.pwhy = fmt.Sprintf("p%g %s %.1f ms against %s", b.q, strings.ToUpper(b.metric), v, b.limit)
		}
	}
	n := l.Completed + l.Failed
	if l.Failed > 0 && n > 0 {
		fs := float64(l.Failed) / float64(n)
		pt.Figures["failed_share"] = fs
		e := math.Inf(1)
		if allow := 1 - j.b.Share; allow > 0 {
			e = fs/allow - 1
		}
		if e > pt.pexcess {
			pt.pexcess = e
			pt.pwhy = fmt.Sprintf("%.1f%% of its requests failed, %.0f%% may miss", 100*fs, 100*(1-j.b.Share))
		}
	}
	if l.Completed == 0 {
		pt.pexcess, pt.pwhy = math.Inf(1), "no request completed"
	}
	pt.excess, pt.why = pt.pexcess, pt.pwhy
	if j.goodput {
		g := l.Goodput.Share
		pt.Figures["good_share"] = g
		pt.excess = j.b.Share - g
		pt.why = fmt.Sprintf("%.1f%% of its requests met the SLO, %.0f%% needed", 100*g, 100*j.b.Share)
	}
	pt.Met = pt.excess <= 0
	if !math.IsInf(pt.excess, 0) {
		pt.Excess = new(pt.excess)
	}
	return pt
}

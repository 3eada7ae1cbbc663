package macro

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Percentiles are the percentiles a level reports beyond its fixed ones,
// as vllm bench serve's --percentile-metrics (which metrics) and
// --metric-percentiles (which percentiles) ask.
type Percentiles struct {
	Metrics []string  // ttft, tpot, itl, e2el
	Of      []float64 // e.g. 50, 95, 99.9
}

// ParsePercentiles reads vLLM's two flags: metrics as "ttft,tpot,itl,e2el"
// and percentiles as "50,90,99" (each above 0 and at most 100).
func ParsePercentiles(metrics, pcts string) (Percentiles, error) {
	var p Percentiles
	for _, m := range strings.Split(metrics, ",") {
		m = strings.TrimSpace(m)
		switch m {
		case "":
		case "ttft", "tpot", "itl", "e2el":
			p.Metrics = append(p.Metrics, m)
		default:
			return Percentiles{}, fmt.Errorf("--percentile-metrics: %q is not ttft, tpot, itl or e2el", m)
		}
	}
	for _, s := range strings.Split(pcts, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x > 0 && x <= 100) {
			return Percentiles{}, fmt.Errorf("--metric-percentiles: %q is not a percentile above 0 and at most 100", s)
		}
		p.Of = append(p.Of, x)
	}
	return p, nil
}

// Key is vLLM's key of percentile q of metric m: p99_ttft_ms, p99.9_itl_ms.
func Key(m string, q float64) string {
	return "p" + strconv.FormatFloat(q, 'f', -1, 64) + "_" + m + "_ms"
}

// of is the asked-for percentiles of the metrics' histograms (µs), in ms
// by key; nil when none was asked for.
func (p Percentiles) of(h map[string]*hdrhistogram.Histogram) map[string]float64 {
	if len(p.Metrics) == 0 || len(p.Of) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, m := range p.Metrics {
		for _, q := range p.Of {
			v := 0.0
			if hh := h[m]; hh != nil && hh.TotalCount() > 0 {
				v = float64(hh.ValueAtQuantile(q)) / 1e3
			}
			out[Key(m, q)] = v
		}
	}
	return out
}

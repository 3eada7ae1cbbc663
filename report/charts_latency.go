package report

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// latencyTile is one panel of the throughput-against-latency chart: a
// latency figure (its percentile at the SLO's share) and its bound.
type latencyTile struct {
	metric string // ttft, tpot, e2el
	q      float64
	bound  time.Duration // 0: none
}

// latencyTiles are the panels for an SLO: one per bounded figure; without
// an SLO, TTFT and TPOT at p90.
func latencyTiles(spec string, levels []phases.LevelResult) []latencyTile {
	b, err := macro.ParseSLOBounds(spec)
	if spec == "" || err != nil {
		return []latencyTile{{metric: "ttft", q: 90}, {metric: "tpot", q: 90}}
	}
	var out []latencyTile
	for _, m := range []struct {
		name string
		d    time.Duration
	}{{"ttft", b.TTFT}, {"tpot", b.TPOT}, {"e2el", b.E2EL}} {
		if m.d > 0 {
			out = append(out, latencyTile{metric: m.name, q: pickPercentile(m.name, 100*b.Share, levels), bound: m.d})
		}
	}
	return out
}

// latencyChart draws output throughput against each latency figure, one
// point per level labelled with its load, and the SLO's bound as a dashed
// vertical line: where the curve crosses it is the most one replica serves
// within the SLO.
func latencyChart(levels []phases.LevelResult, spec, format string) ([]byte, error) {
	if len(levels) < 2 {
		return nil, fmt.Errorf("latency chart: need two levels, have %d", len(levels))
	}
	var plots []*plot.Plot
	for _, t := range latencyTiles(spec, levels) {
		p, err := latencyPlot(levels, t)
		if err != nil {
			return nil, err
		}
		plots = append(plots, p)
	}
	return drawTiles(plots, 16*vg.Centimeter, vg.Length(len(plots))*7*vg.Centimeter, format)
}

func latencyPlot(levels []phases.LevelResult, t latencyTile) (*plot.Plot, error) {
	name := fmt.Sprintf("%s p%g", strings.ToUpper(t.metric), t.q)
	p := plot.New()
	p.Title.Text = "Output throughput vs " + name
	p.X.Label.Text = name + " (ms)"
	p.Y.Label.Text = "output tok/s"
	p.X.Min, p.Y.Min = 0, 0
	p.Add(plotter.NewGrid())
	var xy plotter.XYs
	var labels []string
	for _, l := range levels {
		xy = append(xy, plotter.XY{X: figure(l, t.metric, t.q), Y: l.OutputThroughput})
		labels = append(labels, loadLabel(l))
	}
	line, points, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, err
	}
	p.Add(line, points)
	lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].XAlign, lab.Offset = -0.5, vg.Point{X: 3, Y: 3}
	}
	p.Add(lab)
	if t.bound > 0 {
		x := float64(t.bound) / float64(time.Millisecond)
		top := 0.0
		for _, v := range xy {
			top = max(top, v.Y)
		}
		slo, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top * 1.05}})
		if err != nil {
			return nil, err
		}
		slo.Color = color.RGBA{R: 200, A: 255}
		slo.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(slo)
		p.Legend.Add("SLO "+t.metric+" ≤ "+t.bound.String(), slo)
		p.Legend.Top, p.Legend.Left = true, true
	}
	return p, nil
}

// loadLabel names a level on a chart: C=16, or 3.2/s for an open-loop one.
func loadLabel(l phases.LevelResult) string {
	if l.Rate > 0 {
		return fmt.Sprintf("%.3g/s", l.Rate)
	}
	return fmt.Sprintf("C=%d", l.Concurrency)
}

// latencyChart links the throughput-against-latency chart of a sweep's
// levels, with the SLO its start journalled.
func (n *nb) latencyChart(levels []phases.LevelResult, params any, tag string) {
	var sw Sweep
	sw.setParams(params)
	var with []phases.LevelResult
	for _, l := range levels {
		if l.Completed > 0 {
			with = append(with, l)
		}
	}
	if len(with) < 2 {
		return
	}
	alt := "Output throughput vs latency per level"
	if sw.SLO != "" {
		alt += ", with the SLO " + sw.SLO
	}
	if link := n.addChart(tag+"-throughput-latency."+n.chartExt(), alt, func() ([]byte, error) {
		return latencyChart(with, sw.SLO, n.chartExt())
	}); link != "" {
		n.ln(link + "\n")
	}
}

package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/profdeck/profdeck/phases"
)

// chartLevels are the closed-loop levels a chart against concurrency
// draws: one point per concurrency (the later run of a level a sweep ran
// twice: two points at one x made the log axis degenerate and the chart,
// hence the notebook step, fail on every later run), by concurrency.
func chartLevels(levels []phases.LevelResult) []phases.LevelResult {
	at := map[int]int{}
	var out []phases.LevelResult
	for _, l := range levels {
		if l.Concurrency <= 0 || l.Rate > 0 {
			continue
		}
		if i, ok := at[l.Concurrency]; ok {
			out[i] = l
			continue
		}
		at[l.Concurrency] = len(out)
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Concurrency < out[j].Concurrency })
	return out
}

// macroChart draws output throughput (top) and TPOT p50/p99 (bottom)
// against concurrency, on a log2 axis, as one SVG.
func macroChart(levels []phases.LevelResult, format string) ([]byte, error) {
	var thr, p50, p99 plotter.XYs
	for _, l := range levels {
		if l.Concurrency <= 0 {
			continue
		}
		x := float64(l.Concurrency)
		thr = append(thr, plotter.XY{X: x, Y: l.OutputThroughput})
		p50 = append(p50, plotter.XY{X: x, Y: l.MedianTPOTms})
		p99 = append(p99, plotter.XY{X: x, Y: l.P99TPOTms})
	}
	if len(thr) < 2 {
		return nil, fmt.Errorf("macro chart: need two levels, have %d", len(thr))
	}
	top, bottom := levelPlots("Output throughput vs concurrency", "output tok/s", "TPOT vs concurrency", "TPOT (ms)")
	if err := plotutil.AddLinePoints(top, "output tok/s", thr); err != nil {
		return nil, err
	}
	if err := plotutil.AddLinePoints(bottom, "TPOT p50", p50, "TPOT p99", p99); err != nil {
		return nil, err
	}
	return drawTiles([]*plot.Plot{top, bottom}, 16*vg.Centimeter, 16*vg.Centimeter, format)
}

// loadChart draws each GPU's memory use over the load, in minutes.
// Stalls are drawn as dashed vertical lines where they began.
func loadChart(snaps []snapshot, stalls []stallAt, format string) ([]byte, error) {
	if len(snaps) < 2 {
		return nil, fmt.Errorf("load chart: need two samples, have %d", len(snaps))
	}
	idx, series := gpuSeries(snaps)
	p := plot.New()
	p.Title.Text = "GPU memory during the load"
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = "memory used (GiB)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	t0 := snaps[0].at
	for i, g := range idx {
		var xy plotter.XYs
		for j, v := range series[g] {
			if v < 0 || math.IsNaN(v) {
				continue
			}
			xy = append(xy, plotter.XY{X: snaps[j].at.Sub(t0).Minutes(), Y: v})
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = lineColor(i)
		l.Dashes = plotutil.Dashes(i / len(lineColors))
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("GPU %d", g), l)
	}
	top := 0.0
	for _, g := range idx {
		for _, v := range series[g] {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = max(top, v)
			}
		}
	}
	for i, st := range stalls {
		// The stall began ForS before it was reported.
		x := st.at.Sub(t0).Minutes() - st.s.ForS/60
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{R: 200, A: 255}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		if i == 0 {
			p.Legend.Add("stall began", l)
		}
	}
	return drawTiles([]*plot.Plot{p}, 16*vg.Centimeter, 10*vg.Centimeter, format)
}

// drawTiles draws plots stacked vertically into one SVG (format "svg")
// or PNG (format "png") image.
func drawTiles(plots []*plot.Plot, w, h vg.Length, format string) ([]byte, error) {
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120))}
	case "svg", "":
		c = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("chart format %q: want svg or png", format)
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// Each plot's legend goes in a strip right of the plots, beside its
	// plot, so it never covers a line; the strip is as wide as the widest.
	rows := make([][]*plot.Plot, len(plots))
	legends := make([]plot.Legend, len(plots))
	strip := vg.Length(0)
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
		legends[i], p.Legend = p.Legend, plot.NewLegend()
		if r := legends[i].Rectangle(dc); r.Max.Y > r.Min.Y {
			strip = max(strip, r.Max.X-r.Min.X+vg.Millimeter*6)
		}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Centimeter / 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, draw.Crop(dc, 0, -strip, 0, 0))
	for i, p := range plots {
		tile := canvases[i][0]
		p.Draw(tile)
		leg := legends[i]
		leg.Top, leg.Left, leg.YOffs, leg.Padding = true, true, -vg.Millimeter*8, vg.Millimeter/2 // below the title's height
		leg.Draw(draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dc.Max.X - strip + vg.Millimeter*2, Y: tile.Min.Y}, Max: vg.Point{X: dc.Max.X, Y: tile.Max.Y}}})
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pow2Ticks marks powers of two (1, 2, 4 … 256) on a log axis.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i, v := 0, 1.0; i < 64 && v <= hi*1.0001; i, v = i+1, v*2 {
		if v >= lo*0.9999 {
			ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(v)})
		}
	}
	if len(ts) < 2 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	return ts
}

// gpuChart draws the GPUs' mean and peak power (top) and the energy per
// output token (bottom) against concurrency, on a log2 axis.
func gpuChart(levels []phases.LevelResult, format string) ([]byte, error) {
	var mean, peak, jpt plotter.XYs
	for _, l := range levels {
		if l.Concurrency <= 0 || l.GPU == nil || l.GPU.NoReadings {
			continue
		}
		x := float64(l.Concurrency)
		mean = append(mean, plotter.XY{X: x, Y: l.GPU.MeanPowerW})
		peak = append(peak, plotter.XY{X: x, Y: l.GPU.PeakPowerW})
		if l.GPU.JPerOutputToken > 0 {
			jpt = append(jpt, plotter.XY{X: x, Y: l.GPU.JPerOutputToken})
		}
	}
	if len(mean) < 2 {
		return nil, fmt.Errorf("gpu chart: need two levels, have %d", len(mean))
	}
	top, bottom := levelPlots("GPU power vs concurrency (all GPUs)", "W", "Energy per output token vs concurrency", "J / token")
	if err := plotutil.AddLinePoints(top, "mean", mean, "peak", peak); err != nil {
		return nil, err
	}
	if len(jpt) > 0 {
		if err := plotutil.AddLinePoints(bottom, "J / output token", jpt); err != nil {
			return nil, err
		}
	}
	return drawTiles([]*plot.Plot{top, bottom}, 16*vg.Centimeter, 16*vg.Centimeter, format)
}

// levelPlots are two plots stacked against concurrency (a log2 axis, the
// bottom one labelled), each from zero, with a grid.
func levelPlots(topTitle, topY, bottomTitle, bottomY string) (top, bottom *plot.Plot) {
	top, bottom = plot.New(), plot.New()
	top.Title.Text, top.Y.Label.Text = topTitle, topY
	bottom.Title.Text, bottom.Y.Label.Text = bottomTitle, bottomY
	bottom.X.Label.Text = "concurrency"
	for _, p := range []*plot.Plot{top, bottom} {
		p.Y.Min = 0
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = pow2Ticks{}
		p.Add(plotter.NewGrid())
	}
	return top, bottom
}

// lineColors are 16 colours told apart at a glance (Tableau's 20 less
// its palest), so up to 16 GPUs each have their own; more repeat them
// dashed.
var lineColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {174, 199, 232, 255}, {255, 187, 120, 255},
	{152, 223, 138, 255}, {255, 152, 150, 255}, {197, 176, 213, 255}, {196, 156, 148, 255},
}

// lineColor is the i-th line's colour.
func lineColor(i int) color.Color { return lineColors[i%len(lineColors)] }

package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/profdeck/profdeck/phases"
)

// ParetoDefinitions says what the two axes are.
const ParetoDefinitions = "tokens/s per user = 1000 / the level's median TPOT in ms (one stream's decode speed); " +
	"tokens/s per GPU = the level's output tokens/s ÷ the GPUs of one replica (as the sweep recorded its deployment, " +
	"else the GPUs its sampler counted); a level is on the front when no level of any sweep beats it on both"

// ParetoPoint is one level of one sweep on the plane of tokens/s per user
// against tokens/s per GPU.
type ParetoPoint struct {
	Sweep       string  `json:"sweep"` // its label: A, B, C …
	Path        string  `json:"path"`
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"request_rate,omitempty"`
	TokSPerUser float64 `json:"tok_s_per_user"`
	TokSPerGPU  float64 `json:"tok_s_per_gpu"`
	GPUs        int     `json:"gpus"`
	OnFront     bool    `json:"on_front"`
}

// Pareto is the levels of several sweeps and the front they make.
type Pareto struct {
	Definitions string        `json:"definitions"`
	Points      []ParetoPoint `json:"points"`
	// Front is the points on the front, by tokens/s per user.
	Front []ParetoPoint `json:"front"`
	// Notes say what was left out and why.
	Notes []string `json:"notes,omitempty"`
}

// SweepLabel is the label of the i-th sweep compared: A, B, … Z, then 27 ….
func SweepLabel(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprint(i + 1)
}

// ParetoOf places every level that completed requests of every sweep on
// the plane and marks the front.
func ParetoOf(sweeps []Sweep) Pareto {
	out := Pareto{Definitions: ParetoDefinitions, Points: []ParetoPoint{}, Front: []ParetoPoint{}}
	for i, sw := range sweeps {
		gpus := 0
		switch {
		case sw.Deployment != nil:
			gpus = sw.Deployment.ReplicaGPUs()
		case sw.HostGPUs > 0:
			gpus = sw.HostGPUs
		}
		if gpus == 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("%s (%s) left out: it recorded no deployment and no GPU count", SweepLabel(i), sw.Path))
			continue
		}
		for _, l := range sw.Levels {
			if l.Completed == 0 || l.MedianTPOTms <= 0 {
				continue
			}
			out.Points = append(out.Points, ParetoPoint{Sweep: SweepLabel(i), Path: sw.Path, Concurrency: l.Concurrency, Rate: l.Rate,
				TokSPerUser: 1000 / l.MedianTPOTms, TokSPerGPU: l.OutputThroughput / float64(gpus), GPUs: gpus})
		}
	}
	idx := make([]int, len(out.Points))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		pa, pb := out.Points[idx[a]], out.Points[idx[b]]
		if pa.TokSPerUser != pb.TokSPerUser {
			return pa.TokSPerUser > pb.TokSPerUser
		}
		return pa.TokSPerGPU > pb.TokSPerGPU
	})
	best := -1.0
	for _, i := range idx {
		if p := &out.Points[i]; p.TokSPerGPU > best {
			p.OnFront, best = true, p.TokSPerGPU
		}
	}
	for _, p := range out.Points {
		if p.OnFront {
			out.Front = append(out.Front, p)
		}
	}
	sort.SliceStable(out.Front, func(a, b int) bool { return out.Front[a].TokSPerUser < out.Front[b].TokSPerUser })
	return out
}

// level is a point's level: C=16, or its request rate.
func (p ParetoPoint) level() string {
	return loadLabel(phases.LevelResult{Concurrency: p.Concurrency, Rate: p.Rate})
}

// pointName is a point's sweep and level: B C=16.
func (p ParetoPoint) pointName() string { return p.Sweep + " " + p.level() }

// WritePareto prints the front, by tokens/s per user, and the notes.
func WritePareto(w io.Writer, p Pareto) {
	fmt.Fprintln(w, "Pareto front, tokens/s per user against tokens/s per GPU:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sweep\tlevel\ttok/s per user\ttok/s per GPU\tGPUs\t")
	for _, f := range p.Front {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%d\t\n", f.Sweep, f.level(), f.TokSPerUser, f.TokSPerGPU, f.GPUs)
	}
	tw.Flush()
	for _, n := range p.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintln(w, ParetoDefinitions+".")
}

// ParetoChart draws every sweep's levels (one colour and glyph each) on
// the plane and the front through the best of them.
func ParetoChart(p Pareto, format string) ([]byte, error) {
	if len(p.Points) < 2 {
		return nil, fmt.Errorf("pareto chart: need two levels, have %d", len(p.Points))
	}
	pl := plot.New()
	pl.Title.Text = "Tokens/s per GPU against tokens/s per user"
	pl.X.Label.Text = "tokens/s per user (1000 / median TPOT ms)"
	pl.Y.Label.Text = "output tokens/s per GPU"
	pl.X.Min, pl.Y.Min = 0, 0
	pl.Add(plotter.NewGrid())
	var order []string
	by := map[string]plotter.XYs{}
	for _, pt := range p.Points {
		if _, ok := by[pt.Sweep]; !ok {
			order = append(order, pt.Sweep)
		}
		by[pt.Sweep] = append(by[pt.Sweep], plotter.XY{X: pt.TokSPerUser, Y: pt.TokSPerGPU})
	}
	for i, s := range order {
		sc, err := plotter.NewScatter(by[s])
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
		sc.Radius = vg.Points(3.5)
		pl.Add(sc)
		pl.Legend.Add("sweep "+s+" ("+pathOf(p, s)+")", sc)
	}
	var front plotter.XYs
	var names []string
	for _, f := range p.Front {
		front = append(front, plotter.XY{X: f.TokSPerUser, Y: f.TokSPerGPU})
		names = append(names, f.pointName())
	}
	line, err := plotter.NewLine(front)
	if err != nil {
		return nil, err
	}
	line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	pl.Add(line)
	pl.Legend.Add("Pareto front", line)
	lab, err := plotter.NewLabels(plotter.XYLabels{XYs: front, Labels: names})
	if err != nil {
		return nil, err
	}
	lab.Offset = vg.Point{X: 4, Y: 4}
	pl.Add(lab)
	pl.Legend.Top = true
	pl.Legend.ThumbnailWidth = vg.Points(20)
	return drawTiles([]*plot.Plot{pl}, 18*vg.Centimeter, 12*vg.Centimeter, format)
}

// pathOf is the path of the sweep labelled s.
func pathOf(p Pareto, s string) string {
	for _, pt := range p.Points {
		if pt.Sweep == s {
			return pt.Path
		}
	}
	return ""
}

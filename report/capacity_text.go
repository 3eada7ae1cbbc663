package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteCapacity prints a plan: the answer, the curve it read (each level
// met or missed, the SLO point), the traffic's Little's law, the
// deployment, and the warnings.
func WriteCapacity(w io.Writer, p *CapacityPlan) {
	fmt.Fprintf(w, "capacity: %s\n\n", p.Text)
	fmt.Fprintf(w, "curve: %s (%s), %d levels by %s; SLO %s for %.0f%% of requests (%s), judged on %s\n",
		p.File, p.Source, len(p.Curve.Points), p.Curve.Unit, p.SLO.Spec, 100*p.SLO.Share, p.SLO.From, p.SLO.JudgedBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	keys := figureKeys(p.Curve.Points)
	fmt.Fprintf(tw, "level\treq/s\tout tok/s\tE2E mean ms\t%s\t\t\n", strings.Join(keys, "\t"))
	for _, pt := range p.Curve.Points {
		verdict := "met"
		if !pt.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.3g\t%.0f\t%.0f\t", loadName(pt.Load, p.Curve.Unit), pt.RequestThroughput, pt.OutputThroughput, pt.MeanE2ELms)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t", figureText(k, pt.Figures))
		}
		fmt.Fprintf(tw, "%s\t\n", verdict)
	}
	tw.Flush()
	if r := p.Replica; r != nil {
		how := "as measured"
		if p.Curve.Interpolated {
			how = "interpolated"
		}
		fmt.Fprintf(w, "SLO point: %s, %.3g req/s, %.0f output tok/s, E2E mean %.0f ms (%s); planned with %.0f%% headroom: %.3g req/s",
			loadName(r.Load, p.Curve.Unit), r.RequestRate, r.OutputTokS, r.MeanE2ELms, how, 100*p.Headroom, r.PlannedRequestRate)
		switch p.Curve.Unit {
		case "concurrency":
			fmt.Fprintf(w, ", C≈%.1f", r.PlannedLoad)
		case unitSpeed:
			fmt.Fprintf(w, ", %.3g×", r.PlannedLoad)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "traffic:", p.Traffic.Little)
	}
	if d := p.Deployment; d != nil {
		fmt.Fprintf(w, "replica: %s = %d GPUs on %d node(s), from %s\n", parallelText(*d), d.GPUs, d.Nodes, d.Source)
	}
	for _, x := range p.Warnings {
		fmt.Fprintln(w, "warning:", x)
	}
}

// figureKeys are the judged figures of a curve, sorted.
func figureKeys(pts []CurvePoint) []string {
	set := map[string]bool{}
	for _, pt := range pts {
		for k := range pt.Figures {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func figureText(k string, f map[string]float64) string {
	v, ok := f[k]
	switch {
	case !ok:
		return "—"
	case strings.HasSuffix(k, "_share"):
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	return fmt.Sprintf("%.1f", v)
}

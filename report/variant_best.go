package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// BestVariant names the variant (the baseline among them) that measured the
// largest SLO capacity, or, without an SLO search in every one, the largest
// highest throughput, and by how much it beats the baseline; "" when no
// variant was measured. The highest throughput is that of the sweep's best
// level (the plateau's, when the sweep found one).
func BestVariant(all []phases.Event) string {
	by := VariantEvents(all)
	rows := variantRows(all)
	if len(rows) == 0 {
		return ""
	}
	base := MeasureVariant(by[phases.Baseline])
	names := []string{phases.Baseline}
	figs := map[string]VariantMeasured{phases.Baseline: base}
	slo := base.Has["slo_capacity"]
	for _, r := range rows {
		if r.state != phases.StepDone {
			continue
		}
		m := MeasureVariant(by[r.spec.Name])
		names = append(names, r.spec.Name)
		figs[r.spec.Name] = m
		slo = slo && m.Has["slo_capacity"]
	}
	key, what, unit := "peak_tok_s", "highest throughput", "tok/s"
	val := func(m VariantMeasured) float64 { return m.PeakTokS }
	if slo {
		key, what, unit = "slo_capacity", "SLO capacity", ""
		val = func(m VariantMeasured) float64 { return m.SLOCapacity }
	}
	best := ""
	for _, n := range names {
		if figs[n].Has[key] && (best == "" || val(figs[n]) > val(figs[best])) {
			best = n
		}
	}
	if best == "" {
		return ""
	}
	figure := func(v float64) string { return strings.TrimSpace(fmt.Sprintf("%.4g %s", v, unit)) }
	if best == phases.Baseline || !base.Has[key] {
		return fmt.Sprintf("%s, by its %s (%s); no variant measured more", best, what, figure(val(figs[best])))
	}
	b, v := val(base), val(figs[best])
	return fmt.Sprintf("%s, by its %s: %s against the baseline's %s (%+.0f%%)", best, what, figure(v), figure(b), 100*(v/b-1))
}

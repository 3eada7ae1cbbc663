package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// variantRow is one variant as the notebook's table shows it.
type variantRow struct {
	spec   phases.VariantSpec
	launch string
	pred   *phases.VariantPrediction
	state  string
	evid   string
}

// variantRows reads the variants from the whole journal, in the plan's
// order, each with its latest prediction, launch and end.
func variantRows(events []phases.Event) []*variantRow {
	var rows []*variantRow
	by := map[string]*variantRow{}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.VariantPlanned:
			for _, s := range d.Variants {
				if by[s.Name] == nil {
					by[s.Name] = &variantRow{spec: s, state: phases.StepPending}
					rows = append(rows, by[s.Name])
				}
			}
		case phases.VariantPrediction:
			if r := by[d.Variant]; r != nil {
				r.pred = &d
			}
		case phases.VariantStarted:
			if r := by[d.Spec.Name]; r != nil {
				r.launch, r.state, r.evid = d.Launch, phases.StepStarted, ""
			}
		case phases.VariantFinished:
			if r := by[d.Name]; r != nil {
				r.state, r.evid = d.State, d.Evidence
			}
		}
	}
	return rows
}

// variants writes the variants section: one row per variant, each measured
// figure beside its prediction and the prediction's error, then each
// prediction's model, said as an estimate.
func (n *nb) variants(all []phases.Event) {
	rows := variantRows(all)
	if len(rows) == 0 {
		return
	}
	by := VariantEvents(all)
	fleets := VariantFleets(all, FleetAsk{Capacity: n.opts.Capacity, GPUHour: n.opts.GPUHour})
	head, rule := n.fleetHeads()
	n.ln("## Variants\n")
	n.ln("Each variant is served in turn after the baseline; a figure reads measured (predicted, error).\n")
	n.ln("| variant | change | state | plateau tok/s | plateau C | TPOT C=1 ms | TPOT plateau ms | SLO capacity | J/token" + head + " |")
	n.ln("|---|---|---|---|---|---|---|---|---" + rule + "|")
	for _, r := range rows {
		m := MeasureVariant(by[r.spec.Name])
		var p phases.VariantPrediction
		if r.pred != nil {
			p = *r.pred
		}
		n.p("| %s | %s | %s | %s | %s | %s | %s | %s | %s%s |\n", r.spec.Name, mdCell(variantChange(r.spec)), variantState(r),
			VariantFigure(p.PlateauTokS, m.PlateauTokS, m.Has["plateau_tok_s"]), VariantFigure(p.PlateauC, m.PlateauC, m.Has["plateau_concurrency"]),
			VariantFigure(p.TPOTC1Ms, m.TPOTC1Ms, m.Has["tpot_c1_ms"]), VariantFigure(p.TPOTPlateauMs, m.TPOTPlateauMs, m.Has["tpot_plateau_ms"]),
			VariantFigure(p.SLOCapacity, m.SLOCapacity, m.Has["slo_capacity"]), measuredOnly(m.JPerToken, m.Has["j_per_token"]), n.fleetCells(fleets[r.spec.Name]))
	}
	n.ln("")
	n.variantModels(rows, fleets)
	n.variantsPareto(by, rows)
}

// variantsPareto draws every variant's levels (the baseline's first) on the
// plane of tokens/s per user against tokens/s per GPU, and names the front.
func (n *nb) variantsPareto(by map[string][]phases.Event, rows []*variantRow) {
	names := []string{phases.Baseline}
	for _, r := range rows {
		names = append(names, r.spec.Name)
	}
	var sweeps []Sweep
	baseGPUs := 0
	for _, name := range names {
		c := classify(by[name])
		runs := c.runs[phases.Macro]
		if len(runs) == 0 {
			continue
		}
		sw := journalSweep(name, c, len(runs)-1)
		if name == phases.Baseline {
			baseGPUs = sw.HostGPUs
		} else if sw.HostGPUs == 0 && sw.Deployment == nil {
			sw.HostGPUs = baseGPUs // the same host's GPUs, counted once
		}
		sweeps = append(sweeps, sw)
	}
	if len(sweeps) < 2 {
		return
	}
	p := ParetoOf(sweeps)
	ext := n.chartExt()
	if link := n.addChart("variants-pareto."+ext, "Tokens/s per GPU against tokens/s per user, every variant", func() ([]byte, error) { return ParetoChart(p, ext) }); link != "" {
		n.ln(link + "\n")
	}
	var front []string
	for _, f := range p.Front {
		front = append(front, f.Path+" "+f.level())
	}
	if len(front) > 0 {
		n.p("On the front (tokens/s per user against tokens/s per GPU, median TPOT): %s\n\n", strings.Join(front, ", "))
	}
}

// variantModels says each prediction's model lines, as an estimate, the
// fleet's with them.
func (n *nb) variantModels(rows []*variantRow, fleets map[string]VariantFleet) {
	for _, r := range rows {
		model := []string{}
		if r.pred != nil {
			model = append(model, r.pred.Model...)
		}
		if f := fleets[r.spec.Name].Model; f != "" {
			model = append(model, f)
		}
		switch {
		case r.pred == nil:
		case r.pred.CannotPredict != "":
			n.p("- **%s**: not predicted: %s\n", r.spec.Name, r.pred.CannotPredict)
		case len(model) > 0:
			n.p("- **%s**, an estimate from the baseline's measurements: %s\n", r.spec.Name, strings.Join(model, "; "))
		}
	}
	n.ln("")
}

// fleetHeads are the table's fleet columns: GPUs for the campaign's
// capacity traffic when it asks one, dollars per million output tokens
// when a GPU-hour has a price.
func (n *nb) fleetHeads() (head, rule string) {
	if n.opts.Capacity != nil {
		head, rule = head+" | GPUs for the target", rule+"|---"
	}
	if n.opts.GPUHour > 0 {
		head, rule = head+" | $/M output tok", rule+"|---"
	}
	return head, rule
}

// fleetCells are a variant's fleet cells, as fleetHeads heads them.
func (n *nb) fleetCells(f VariantFleet) string {
	gpus, cost := f.figures()
	out := ""
	if n.opts.Capacity != nil {
		out += " | " + gpus
	}
	if n.opts.GPUHour > 0 {
		out += " | " + cost
	}
	return out
}

// variantChange is what a variant changes, in a few words.
func variantChange(s phases.VariantSpec) string {
	var parts []string
	if s.Launch != "" {
		parts = append(parts, "launch `"+s.Launch+"`")
	}
	if len(s.Args) > 0 {
		parts = append(parts, "`"+strings.Join(s.Args, " ")+"`")
	}
	for k, v := range s.Env {
		parts = append(parts, "`"+k+"="+v+"`")
	}
	return strings.Join(parts, ", ")
}

func variantState(r *variantRow) string {
	if r.evid == "" || r.state == phases.StepDone {
		return r.state
	}
	return r.state + ": " + mdCell(r.evid)
}

// VariantFigure is a measured figure beside its prediction and the error,
// "measured (predicted, ±error%)", with a dash for what is missing: as
// every view of a variant writes it.
func VariantFigure(p phases.Predicted, measured float64, ok bool) string {
	m := measuredOnly(measured, ok)
	if !p.OK {
		return m
	}
	if pct, eok := PredictionError(p, measured, ok); eok {
		if math.Abs(pct) < 0.5 {
			pct = 0 // an error that rounds to nothing is +0%, never -0%
		}
		return fmt.Sprintf("%s (%s, %+.0f%%)", m, vnum(p.Value), pct)
	}
	return fmt.Sprintf("%s (%s)", m, vnum(p.Value))
}

func measuredOnly(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return vnum(v)
}

func vnum(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

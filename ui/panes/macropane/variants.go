package macropane

// Board is the Macro pane's view of a campaign's server variants: which
// one is serving, those to come, and each one's predicted figures as the
// run journals them. It folds the variant events and renders them; it
// reads nothing but events.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// Row is one variant of the run.
type Row struct {
	Name     string
	State    string // "to come", "serving", or the finished state
	Pred     phases.VariantPrediction
	HasPred  bool
	Evidence string
	// Measured while it served: its plateau, and the median TPOT of its
	// sweep's levels by concurrency.
	Plateau *phases.Plateau
	TPOT    map[int]float64
}

// Board is the run's variants as their events say.
type Board struct {
	Rows    []Row
	Serving string // the variant serving now, "" between variants
}

// Add folds one event; events of other kinds are ignored.
func (b *Board) Add(ev phases.Event) {
	switch d := ev.Data.(type) {
	case phases.VariantPlanned:
		b.plan(d)
	case *phases.VariantPlanned:
		b.plan(*d)
	case phases.VariantPrediction:
		b.predict(d)
	case *phases.VariantPrediction:
		b.predict(*d)
	case phases.VariantStarted:
		b.start(d.Spec.Name)
	case *phases.VariantStarted:
		b.start(d.Spec.Name)
	case phases.VariantFinished:
		b.finish(d)
	case *phases.VariantFinished:
		b.finish(*d)
	case phases.Plateau:
		b.measured(func(r *Row) { r.Plateau = &d })
	case phases.LevelResult:
		b.measured(func(r *Row) { r.TPOT[d.Concurrency] = d.MedianTPOTms })
	}
}

// measured records a figure of the variant serving now.
func (b *Board) measured(set func(*Row)) {
	if b.Serving == "" {
		return
	}
	r := b.row(b.Serving)
	if r.TPOT == nil {
		r.TPOT = map[int]float64{}
	}
	set(r)
}

func (b *Board) plan(p phases.VariantPlanned) {
	done := map[string]bool{}
	for _, n := range p.Done {
		done[n] = true
	}
	for _, v := range p.Variants {
		r := b.row(v.Name)
		if r.State == "" {
			r.State = "to come"
			if done[v.Name] {
				r.State = phases.StepDone
			}
		}
	}
}

func (b *Board) predict(p phases.VariantPrediction) {
	r := b.row(p.Variant)
	r.Pred, r.HasPred = p, true
}

func (b *Board) start(name string) {
	b.row(name).State = "serving"
	b.Serving = name
}

func (b *Board) finish(f phases.VariantFinished) {
	r := b.row(f.Name)
	r.State, r.Evidence = f.State, f.Evidence
	if b.Serving == f.Name {
		b.Serving = ""
	}
}

// row finds a variant's row, adding it (to come) when new.
func (b *Board) row(name string) *Row {
	for i := range b.Rows {
		if b.Rows[i].Name == name {
			return &b.Rows[i]
		}
	}
	b.Rows = append(b.Rows, Row{Name: name, State: "to come"})
	return &b.Rows[len(b.Rows)-1]
}

// Header is the one line naming the variant serving and those to come.
func (b Board) Header() string {
	var next []string
	for _, r := range b.Rows {
		if r.State == "to come" {
			next = append(next, r.Name)
		}
	}
	s := "serving " + orDash(b.Serving, "—")
	if len(next) > 0 {
		s += " · to come: " + strings.Join(next, ", ")
	}
	return s
}

// View is the header and the variants table, cut to width: per variant
// its state and its plateau (tok/s), TPOT at C=1 and at the plateau (ms),
// each measured beside its prediction (an estimate, ≈) and the error.
func (b Board) View(width int) string {
	const row = "%-12s %-8s %-22s %-20s %-20s"
	lines := []string{b.Header(), fmt.Sprintf(row, "variant", "state", "plateau tok/s", "TPOT C=1 ms", "TPOT plateau ms")}
	for _, r := range b.Rows {
		var plat, c1, cp cell
		plat.pred, c1.pred, cp.pred = r.Pred.PlateauTokS, r.Pred.TPOTC1Ms, r.Pred.TPOTPlateauMs
		c1.meas, c1.ok = r.TPOT[1]
		if p := r.Plateau; p != nil {
			plat.meas, plat.ok = p.OutputThroughput, true
			cp.meas, cp.ok = r.TPOT[p.Concurrency]
		}
		lines = append(lines, fmt.Sprintf(row, r.Name, r.State, plat.text(r.HasPred), c1.text(r.HasPred), cp.text(r.HasPred)))
	}
	for i, l := range lines {
		if rs := []rune(l); width > 0 && len(rs) > width {
			lines[i] = string(rs[:width])
		}
	}
	return strings.Join(lines, "\n")
}

// cell is one figure of a variant: measured (ok) and predicted.
type cell struct {
	meas float64
	ok   bool
	pred phases.Predicted
}

// text is "measured (predicted≈ ±error%)", or what of it is known.
func (c cell) text(hasPred bool) string {
	p := "—"
	if hasPred {
		p = fig(c.pred)
	}
	if !c.ok {
		return p
	}
	m := strconv.FormatFloat(c.meas, 'f', decimals(c.meas), 64)
	if !c.pred.OK || c.pred.Value == 0 {
		return m + " (" + p + ")"
	}
	return fmt.Sprintf("%s (%s %+.0f%%)", m, p, (c.meas-c.pred.Value)/c.pred.Value*100)
}

// decimals is one decimal under 100, none above.
func decimals(v float64) int {
	if v < 100 {
		return 1
	}
	return 0
}

// fig formats a predicted figure, "?" when it cannot be predicted.
func fig(p phases.Predicted) string {
	if !p.OK {
		return "?"
	}
	return strconv.FormatFloat(p.Value, 'f', decimals(p.Value), 64) + "≈"
}

func orDash(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

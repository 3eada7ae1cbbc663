package macropane

// Board is the Macro pane's view of a campaign's server variants: which
// one is serving, those to come, and each one's predicted figures as the
// run journals them. It folds the variant events and renders them; it
// reads nothing but events.

import (
	"fmt"
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
	}
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

// View is the header and the variants table (predicted figures, each an
// estimate: plateau tok/s and C, TPOT ms at C=1 and at the plateau), cut
// to width.
func (b Board) View(width int) string {
	lines := []string{b.Header(), fmt.Sprintf("%-14s %-8s %17s %10s %10s", "variant", "state", "plateau≈", "TPOT C=1≈", "TPOT plat≈")}
	for _, r := range b.Rows {
		plat, c1, cp := "—", "—", "—"
		if r.HasPred {
			plat = fig(r.Pred.PlateauTokS, "%.0f tok/s")
			if r.Pred.PlateauC.OK {
				plat += fmt.Sprintf(" C=%.0f", r.Pred.PlateauC.Value)
			}
			c1, cp = fig(r.Pred.TPOTC1Ms, "%.1f ms"), fig(r.Pred.TPOTPlateauMs, "%.1f ms")
		}
		lines = append(lines, fmt.Sprintf("%-14s %-8s %17s %10s %10s", r.Name, r.State, plat, c1, cp))
	}
	for i, l := range lines {
		if rs := []rune(l); width > 0 && len(rs) > width {
			lines[i] = string(rs[:width])
		}
	}
	return strings.Join(lines, "\n")
}

// fig formats a predicted figure, "?" when it cannot be predicted.
func fig(p phases.Predicted, format string) string {
	if !p.OK {
		return "?"
	}
	return fmt.Sprintf(format, p.Value)
}

func orDash(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

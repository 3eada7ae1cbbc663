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
	"github.com/profdeck/profdeck/report"
)

// Row is one variant of the run.
type Row struct {
	Name     string
	State    string // "to come", "serving", or the finished state
	Pred     phases.VariantPrediction
	Evidence string
	// Its sweep's events while it served, and its figures measured from
	// them as the notebook measures them (kept as each event comes).
	events   []phases.Event
	Measured report.VariantMeasured
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
	case phases.Plateau, phases.LevelResult, phases.Search:
		b.measured(ev)
	}
}

// measured adds a sweep's event to the variant serving now and measures
// its figures again.
func (b *Board) measured(ev phases.Event) {
	if b.Serving == "" {
		return
	}
	r := b.row(b.Serving)
	r.events = append(r.events, ev)
	r.Measured = report.MeasureVariant(r.events)
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
	r.Pred = p
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
// its state and its plateau (tok/s), mean TPOT at C=1 and at the plateau
// (ms), each measured beside its prediction and the error, in the
// notebook's words.
func (b Board) View(width int) string {
	name := len("variant")
	for _, r := range b.Rows {
		name = max(name, len([]rune(r.Name)))
	}
	row := "%-" + strconv.Itoa(name) + "s %-8s %-22s %-20s %-20s"
	lines := []string{b.Header(), fmt.Sprintf(row, "variant", "state", "plateau tok/s", "TPOT C=1 ms", "TPOT plateau ms")}
	for _, r := range b.Rows {
		m := r.Measured
		lines = append(lines, fmt.Sprintf(row, r.Name, r.State,
			report.VariantFigure(r.Pred.PlateauTokS, m.PlateauTokS, m.Has[report.KeyPlateauTokS]),
			report.VariantFigure(r.Pred.TPOTC1Ms, m.TPOTC1Ms, m.Has[report.KeyTPOTC1]),
			report.VariantFigure(r.Pred.TPOTPlateauMs, m.TPOTPlateauMs, m.Has[report.KeyTPOTPlateau])))
	}
	for i, l := range lines {
		if rs := []rune(l); width > 0 && len(rs) > width {
			lines[i] = string(rs[:width])
		}
	}
	return strings.Join(lines, "\n")
}

func orDash(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

package phases

import (
	"reflect"
	"testing"
	"time"
)

func TestBrackets(t *testing.T) {
	var b Brackets
	at := time.Unix(0, 0)
	for _, c := range []struct {
		data   any
		kind   string
		name   string
		opened bool
		open   []string
	}{
		{RunStarted{}, KindRunStarted, RunBracket, true, []string{RunBracket}},
		{PhaseStarted{Name: Load}, KindSessionPhaseStarted, Load, true, []string{Load, RunBracket}},
		{PhaseStarted{Name: Macro}, KindSessionPhaseStarted, Macro, true, []string{Load, Macro, RunBracket}},
		{Note{Text: "n"}, KindNotesNote, "", false, []string{Load, Macro, RunBracket}},
		{PhaseFinished{Name: Macro}, KindSessionPhaseFinished, Macro, false, []string{Load, RunBracket}},
		{PhaseFinished{Name: Macro}, KindSessionPhaseFinished, Macro, false, []string{Load, RunBracket}},
		{RunFinished{}, KindRunFinished, RunBracket, false, []string{Load}},
	} {
		name, opened := b.See(New(at, c.kind, c.data))
		if name != c.name || opened != c.opened || !reflect.DeepEqual(b.Names(), c.open) {
			t.Errorf("%T: %q %v open %v, want %q %v open %v", c.data, name, opened, b.Names(), c.name, c.opened, c.open)
		}
	}
	if !b.Open(Load) || b.Open(Macro) {
		t.Errorf("open: load %v macro %v", b.Open(Load), b.Open(Macro))
	}
}

// Step says what each event changed and which start a finish closes; Norm
// brackets names as the caller reads them; Nested needs a finish per start.
func TestBracketsStepNormNested(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	b := Brackets{Norm: func(n string) string {
		if n == "Macro" || n == Macro {
			return Macro
		}
		return ""
	}}
	if ch := b.Step(New(at(1), KindSessionPhaseStarted, PhaseStarted{Name: "Macro"})); ch.Name != Macro || !ch.Opened || !ch.Start.Time.IsZero() || !b.Open(Macro) {
		t.Errorf("first start: %+v", ch)
	}
	if ch := b.Step(New(at(2), KindSessionPhaseStarted, PhaseStarted{Name: "other"})); ch != (Change{}) {
		t.Errorf("a name Norm leaves out: %+v", ch)
	}
	ch := b.Step(New(at(3), KindSessionPhaseFinished, PhaseFinished{Name: Macro}))
	if ch.Name != Macro || ch.Opened || !ch.Start.Time.Equal(at(1)) || b.Open(Macro) {
		t.Errorf("finish: %+v open %v", ch, b.Open(Macro))
	}
	// A stray finish closes nothing, yet still names the latest start.
	ch = b.Step(New(at(4), KindSessionPhaseFinished, PhaseFinished{Name: Macro}))
	if ch.Name != Macro || ch.Opened || b.Open(Macro) || !ch.Start.Time.Equal(at(1)) {
		t.Errorf("stray finish: %+v", ch)
	}
	if name, start := b.Kind(New(at(5), KindRunStarted, RunStarted{})); name != RunBracket || !start || b.Open(RunBracket) {
		t.Errorf("kind: %q %v (and Kind folds nothing: open %v)", name, start, b.Open(RunBracket))
	}

	for _, nested := range []bool{false, true} {
		n := Brackets{Nested: nested}
		n.Step(New(at(1), KindSessionPhaseStarted, PhaseStarted{Name: NCCL}))
		n.Step(New(at(2), KindSessionPhaseStarted, PhaseStarted{Name: NCCL}))
		n.Step(New(at(3), KindSessionPhaseFinished, PhaseFinished{Name: NCCL}))
		if n.Open(NCCL) != nested {
			t.Errorf("nested %v: two starts and one finish leave it open: %v", nested, n.Open(NCCL))
		}
		n.Step(New(at(4), KindSessionPhaseFinished, PhaseFinished{Name: NCCL}))
		n.Step(New(at(5), KindSessionPhaseFinished, PhaseFinished{Name: NCCL}))
		if n.Open(NCCL) || len(n.Names()) != 0 {
			t.Errorf("nested %v: after the finishes: open %v", nested, n.Names())
		}
	}
}

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

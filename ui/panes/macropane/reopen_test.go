package macropane

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// journalled is the recorded sweep as its journal holds it: no ticks and
// no scrapes (they are not journalled), and each level's series before
// its result, as the engine emits it.
func journalled(evs []phases.Event) []phases.Event {
	var out []phases.Event
	var s phases.MacroSeries
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case phases.MacroTick:
			s.Add(d, 0, 0)
			continue
		case phases.ServerStats:
			continue
		case phases.LevelStarted:
			s = phases.MacroSeries{Concurrency: d.Concurrency}
		case phases.LevelResult:
			out = append(out, phases.New(ev.Time, phases.KindMacroSeries, s))
		}
		out = append(out, ev)
	}
	return out
}

// TestReopenedJournalDrawsTheCharts: the Macro pane given a journal (as
// the cockpit does on reopening it) draws the same client charts, with
// the same level and plateau marks, as it drew live.
func TestReopenedJournalDrawsTheCharts(t *testing.T) {
	evs := loadEvents(t)
	live := newPane(t, 100, 30, true)
	replay(live, evs, -1)

	reopened := newPane(t, 100, 30, true)
	reopened.Update(common.EventsMsg{At: clock0, Events: journalled(evs), Replayed: true})
	if reopened.samples == 0 || reopened.samples != live.samples {
		t.Fatalf("samples: reopened %d, live %d", reopened.samples, live.samples)
	}
	for name, rings := range map[string][2]*ring{"tpot p50": {&live.tpot50, &reopened.tpot50}, "tpot p99": {&live.tpot99, &reopened.tpot99},
		"ttft": {&live.ttft, &reopened.ttft}, "tok/s": {&live.toks, &reopened.toks}} {
		if !slices.Equal(rings[0].v, rings[1].v) {
			t.Errorf("%s: the reopened chart differs from the live one", name)
		}
	}
	if !slices.Equal(live.marks, reopened.marks) {
		t.Errorf("marks: live %+v, reopened %+v", live.marks, reopened.marks)
	}
	if reopened.gpu.src != nil {
		t.Error("the GPU strip of a sweep read back (it would read 0 W)")
	}
	// The charts' headline figures read the sweep's last seconds, not 0.
	if v := plain(reopened); strings.Contains(v, "TPOT p50 0.0 ms") {
		t.Errorf("the reopened charts are empty:\n%s", v)
	}

	// Live, the series does not draw the level a second time.
	twice := newPane(t, 100, 30, true)
	var withSeries []phases.Event
	var s phases.MacroSeries
	for _, ev := range evs {
		if d, ok := ev.Data.(phases.MacroTick); ok {
			s.Add(d, 0, 0)
		}
		if _, ok := ev.Data.(phases.LevelResult); ok {
			withSeries = append(withSeries, phases.New(ev.Time, phases.KindMacroSeries, s))
			s = phases.MacroSeries{}
		}
		withSeries = append(withSeries, ev)
	}
	replay(twice, withSeries, -1)
	if twice.samples != live.samples {
		t.Fatalf("live with series: %d samples, want %d", twice.samples, live.samples)
	}
}

// TestReopenedCutOffSweep: a journal whose sweep started and never
// finished (the process died) reopens as cut short, not running, whether it
// stopped inside a level or between two; a finished one as finished, and a
// live start afterwards runs.
func TestReopenedCutOffSweep(t *testing.T) {
	evs := journalled(loadEvents(t))
	at := func(i int) time.Time { return clock0.Add(time.Duration(i) * time.Second) }
	started := phases.New(at(0), phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
	finished := phases.New(at(1), phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro})
	// The last level's start, and the result before it.
	lastStart, lastResult := -1, -1
	for i, ev := range evs {
		if _, ok := ev.Data.(phases.LevelStarted); ok {
			lastStart = i
		}
	}
	for i, ev := range evs[:max(0, lastStart)] {
		if _, ok := ev.Data.(phases.LevelResult); ok {
			lastResult = i
		}
	}
	if lastStart < 0 || lastResult < 0 {
		t.Fatalf("the test sweep has no level after a result (start %d, result %d)", lastStart, lastResult)
	}
	for _, tc := range []struct {
		name        string
		events      []phases.Event
		title, line string
	}{
		{"inside a level", append([]phases.Event{started}, evs[:lastStart+1]...), "cut short (no end in the journal)", "cut short in level"},
		{"between levels", append([]phases.Event{started}, evs[:lastResult+1]...), "cut short (no end in the journal)", "cut short after"},
		{"finished", append(append([]phases.Event{started}, evs...), finished), "· finished", "levels done"},
	} {
		for _, size := range [][2]int{{80, 22}, {120, 36}} {
			m := newPane(t, size[0], size[1], false)
			m.Update(common.EventsMsg{At: clock0, Events: slices.Clone(tc.events), Replayed: true})
			v := plain(m)
			title := strings.SplitN(v, "\n", 2)[0]
			if !strings.Contains(title, tc.title) || strings.Contains(v, "running") {
				t.Errorf("%s at %dx%d: title %q, want %q and no \"running\":\n%s", tc.name, size[0], size[1], title, tc.title, v)
			}
			if !strings.Contains(v, tc.line) || strings.Contains(v, "0% ·") {
				t.Errorf("%s at %dx%d: the progress line lacks %q (or shows a live bar):\n%s", tc.name, size[0], size[1], tc.line, v)
			}
		}
	}

	// A live start after the reopened cut-off sweep is one under way.
	m := newPane(t, 100, 30, false)
	m.Update(common.EventsMsg{At: clock0, Events: append([]phases.Event{started}, evs[:lastStart+1]...), Replayed: true})
	m.Update(common.EventsMsg{At: at(5), Events: []phases.Event{phases.New(at(5), phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(at(5), phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 1})}})
	if title := strings.SplitN(plain(m), "\n", 2)[0]; !strings.Contains(title, "running") {
		t.Errorf("a live sweep after a cut-off one: title %q", title)
	}
}

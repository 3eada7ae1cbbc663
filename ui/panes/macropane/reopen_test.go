package macropane

import (
	"slices"
	"strings"
	"testing"

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

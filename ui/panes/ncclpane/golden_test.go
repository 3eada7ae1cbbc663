package ncclpane

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

var at = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// measured is the NCCL run on two H200s kept in the engine's testdata.
func measured(t testing.TB) []phases.Event {
	t.Helper()
	var r nccl.Result
	panetest.ReadJSON(t, "../../../phases/nccl/testdata/nccl-kimi-k2.5-nproc2.json", &r)
	evs := []phases.Event{phases.New(at, phases.KindNCCLEnv, r.Env)}
	for _, b := range r.Bursts {
		evs = append(evs, phases.New(at, phases.KindNCCLBurst, b))
	}
	for _, a := range r.AllToAll {
		evs = append(evs, phases.New(at, phases.KindNCCLAllToAll, a))
	}
	if r.Cliff != nil {
		evs = append(evs, phases.New(at, phases.KindNCCLCliff, r.Cliff))
	}
	return evs
}

func sized(m *Model, w, h int) string {
	m.SetSize(w, h)
	return m.View()
}

// The pane's main states, each filling both boxes: before a run, a
// finished run, scrolled to its All-to-All table, and cancelled.
func TestGoldenStates(t *testing.T) {
	m := New(&common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "idle-80x20", sized(m, 80, 20))

	m.Update(common.EventsMsg{At: at, Events: measured(t)})
	m.r.State, m.r.Label = common.RunFinished, "kimi-k2.5 TP8 · 2 ranks"
	m.changed() // as the run's end does through Update
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "done-80x20", sized(m, 80, 20))
	panetest.Golden(t, "done-120x36", sized(m, 120, 36))
	m.SetSize(80, 20)
	m.Update(panetest.Key("G"))
	panetest.Golden(t, "done-bottom-80x20", m.View())

	m.r.State = common.RunCancelled
	m.changed() // as the run's end does through Update
	panetest.Golden(t, "cancelled-80x20", m.View())
}

package micropane

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

var at = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// measured is the micro run on one H200 kept in the engine's testdata.
func measured(t testing.TB) []phases.Event {
	t.Helper()
	var r micro.Result
	panetest.ReadJSON(t, "../../../phases/micro/testdata/micro-kimi-k2.5-tp8.json", &r)
	evs := []phases.Event{phases.New(at, phases.KindMicroEnv, r.Env), phases.New(at, phases.KindMicroCalib, r.Calib)}
	for _, g := range r.GEMMs {
		evs = append(evs, phases.New(at, phases.KindMicroGEMM, g))
	}
	for _, s := range r.Steps {
		evs = append(evs, phases.New(at, phases.KindMicroStep, s))
	}
	return evs
}

func bare() *Model {
	return New(&common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return at }})
}

// The pane's main states, each filling both boxes: before a run, a
// finished run (M=1, and M=128 after l), and GPUs found busy.
func TestGoldenStates(t *testing.T) {
	m := bare()
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "idle-80x20", sized(m, 80, 20))

	m.Update(common.EventsMsg{At: at, Events: measured(t)})
	m.r.State, m.r.Label = common.RunFinished, "kimi-k2.5 TP8"
	m.changed() // as the run's end does through Update
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "done-80x20", sized(m, 80, 20))
	panetest.Golden(t, "done-120x36", sized(m, 120, 36))
	m.Update(panetest.Key("l"))
	m.Update(panetest.Key("l"))
	m.Update(panetest.Key("l"))
	panetest.Golden(t, "done-m128-80x20", sized(m, 80, 20))

	m = bare()
	m.r.State = common.RunBusy
	m.r.Busy = &pyrun.BusyError{Procs: []pyrun.GPUProc{{PID: 4711, Name: "VLLM::Worker_TP0", UsedMiB: 77824}}}
	m.changed()
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "busy-80x20", sized(m, 80, 20))
}

func sized(m *Model, w, h int) string {
	m.SetSize(w, h)
	return m.View()
}

package profilepane

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

var at = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func sized(m *Model, w, h int) string {
	m.SetSize(w, h)
	return m.View()
}

// The pane's main states, each filling both boxes: what s will do, a
// capture summarised (the H200 key_averages table in the engine's
// testdata), and a server without the profiler.
func TestGoldenStates(t *testing.T) {
	c := campaign.Defaults()
	c.Server.URL = "http://127.0.0.1:8000"
	newPane := func() *Model {
		return New(&common.Deps{Campaign: c, Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
			Now: func() time.Time { return at }})
	}
	m := newPane()
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "idle-80x20", sized(m, 80, 20))

	sum, err := profile.ParseFile("../../../phases/profile/testdata/torch-profiler-01-key-averages-h200.txt", 15)
	if err != nil {
		t.Fatal(err)
	}
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindProfileSummary, sum)}})
	m.r.State = common.RunFinished
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "captured-80x20", sized(m, 80, 20))
	panetest.Golden(t, "captured-120x36", sized(m, 120, 36))

	m = newPane()
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindProfileFailed,
		phases.ProfileFailed{Step: "start_profile", Error: "POST /start_profile: 404", ProfilerDisabled: true})}})
	m.r.State = common.RunFailed
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "disabled-80x20", sized(m, 80, 20))
}

package profilepane

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

func newPane(t *testing.T) (*Model, *sim.Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, sim.Options{LoadTime: 300 * time.Millisecond, Seed: 3, ProfilerFlush: new(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := campaign.Defaults()
	c.Host = "sim"
	c.Server.URL = "http://" + d.Options().ServerAddr
	c.Profile.Requests = 3
	c.Macro.InputLen, c.Macro.OutputLen = 16, 12
	deps := &common.Deps{Ctx: ctx, Host: d, Campaign: c, Session: report.NewSession(ctx, nil),
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(), Now: time.Now}
	m := New(deps)
	m.SetSize(78, 19)
	return m, d, ctx
}

func pane(m *Model) panetest.Pane {
	return panetest.Pane{C: m, D: m.d, Phase: phases.Profile}
}

// press sends a key and runs the command it returns (the capture runs to
// its end inside it), feeding the session's events back as the root does.
func press(t *testing.T, m *Model, k string) {
	t.Helper()
	pane(m).Press(k)
}

func drain(m *Model) { pane(m).Drain() }

// s on a server without the profiler: the pane says to restart it from the
// Load pane with r, and that it reloads the weights.
func TestPaneProfilerDisabled(t *testing.T) {
	m, d, ctx := newPane(t)
	o := d.Options()
	if err := d.Run(ctx, "vllm serve "+o.Model+" > "+o.LogPath+" 2>&1 &", nil, nil); err != nil {
		t.Fatal(err)
	}
	for !d.Ready() {
		time.Sleep(20 * time.Millisecond)
	}
	press(t, m, "s")
	v := ansi.Strip(m.View())
	for _, want := range []string{"SIMULATED", "404", "(1, then r)", "reload of the weights"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	panetest.Fits(t, v, 78, 19)
}

// s with no server running: the pane points to pane 1 (start, or r to
// restart with the profiler) and says what the reload costs, from the
// last load's events; never Go's dial error.
func TestPaneServerDown(t *testing.T) {
	m, _, _ := newPane(t)
	m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{
		phases.New(time.Now(), phases.KindLoadMilestone, phases.Milestone{Stage: "ready", AtS: 1800})}})
	press(t, m, "s")
	v := ansi.Strip(m.View())
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{"No server answers", "(1, then s)", "r there", "30 min last time"} {
		if !strings.Contains(flat, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "dial tcp") {
		t.Errorf("raw dial error shown:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
}

// s on a server with the profiler: the steps, then the category split and
// the kernels, fitting 78×19; j scrolls the kernels.
func TestPaneCapture(t *testing.T) {
	m, d, ctx := newPane(t)
	if err := profile.PrepareSim(ctx, d, campaign.DefaultProfilerDir); err != nil {
		t.Fatal(err)
	}
	// A sweep ran before: its plateau sets the second level of the load,
	// its TPOT per level the cross-check. The root hands the pane the
	// sweep's events too.
	m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{
		phases.New(time.Now(), phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MeanTPOTms: 12.5}),
		phases.New(time.Now(), phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, MeanTPOTms: 15.9}),
		phases.New(time.Now(), phases.KindMacroPlateau, phases.Plateau{Concurrency: 8, OutputThroughput: 600}),
	}})
	if v := m.View(); !strings.Contains(v, "s captures") || !strings.Contains(v, "C=1,8") {
		t.Errorf("idle view should say what s does, at C=1 and the plateau:\n%s", v)
	}
	press(t, m, "s")
	if m.sum == nil {
		t.Fatalf("no summary; view:\n%s", m.View())
	}
	// One window per level; the last one shows, compared with the TPOT of
	// its own level (not C=1's).
	if len(m.levels) != 2 || m.levels[0].Level != 1 || m.levels[1].Level != 8 || m.sum.Level != 8 {
		t.Errorf("levels %+v, shown C=%d", m.levels, m.sum.Level)
	}
	v := ansi.Strip(m.View())
	for _, want := range []string{"communication", "gemm", "attention", "moe", "other", "ncclDevKernel_AllReduce", "per decode step", "% of GPU time",
		"% of mean TPOT 15.90ms at C=8", "C=1 ", "▶C=8 "} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	panetest.Fits(t, v, 78, 19)
	// Where the decode-step count came from stays on screen at 78 columns.
	if !strings.Contains(v, "steps in the trace") {
		t.Errorf("view does not say where the step count came from:\n%s", v)
	}
	press(t, m, "l")
	if v := ansi.Strip(m.View()); m.sum.Level != 1 || !strings.Contains(v, "% of mean TPOT 12.50ms at C=1") || !strings.Contains(v, "▶C=1 ") {
		t.Errorf("l did not show C=1:\n%s", v)
	}
	first := m.kernels.Offset
	press(t, m, "j")
	if m.kernels.Offset != first+1 {
		t.Errorf("j: scroll %d → %d", first, m.kernels.Offset)
	}
	m.Update(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl})
	if m.kernels.Offset <= first+1 {
		t.Errorf("ctrl+d: scroll stays at %d", m.kernels.Offset)
	}
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	if m.kernels.Offset != 0 {
		t.Errorf("ctrl+u twice: scroll %d, want 0", m.kernels.Offset)
	}
	m.SetSize(120, 40)
	big := m.View()
	panetest.Fits(t, big, 120, 40)
	if n := strings.Count(big, "µs/step"); n != 1 {
		t.Errorf("kernel header %d times", n)
	}
	if !strings.Contains(big, "↓") && len(m.sum.Top) > 0 && strings.Count(big, "\n") < 10 {
		t.Errorf("big view too short:\n%s", big)
	}
	if m.Busy() {
		t.Error("still busy after the capture")
	}
}

// While a capture runs the pane shows the running step with its elapsed
// time, and c cancels it.
func TestPaneStepsAndCancel(t *testing.T) {
	m, d, ctx := newPane(t)
	if err := profile.PrepareSim(ctx, d, campaign.DefaultProfilerDir); err != nil {
		t.Fatal(err)
	}
	m.d.Campaign.Profile.Requests = 200
	m.d.Campaign.Macro.OutputLen = 200
	_, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"})
	done := make(chan tea.Msg, 1)
	go func() {
		var last tea.Msg
		for _, c := range cmd().(tea.BatchMsg) {
			if msg := c(); msg != nil {
				last = msg
			}
		}
		done <- last
	}()
	// Wait for the load step, then look at the view.
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-m.d.Session.Updates():
			m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{ev}})
		case <-deadline:
			t.Fatal("no load step")
		}
		if n := len(m.steps); n > 0 && m.steps[n-1].name == "load" {
			break
		}
	}
	m.Update(common.TickMsg{At: time.Now()})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "load") || !strings.Contains(v, "✓ check") || !strings.Contains(v, "capturing") {
		t.Errorf("running view:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	_, c := m.Update(tea.KeyPressMsg{Code: 'c', Text: "c"})
	if c == nil || m.r.State != common.RunCancelling {
		t.Fatalf("c: state %v", m.r.State)
	}
	select {
	case msg := <-done:
		if _, ok := msg.(common.RunEndedMsg); !ok {
			t.Fatalf("done = %#v, want the capture's end", msg)
		}
		drain(m)
		_, cmd := m.Update(msg)
		if cmd != nil {
			m.Update(cmd())
		}
		if m.r.State != common.RunCancelled {
			t.Fatalf("state %v, want cancelled", m.r.State)
		}
		if v := ansi.Strip(m.View()); !strings.Contains(v, "cancelled") || m.Busy() {
			t.Errorf("after cancel:\n%s", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the capture did not end after c")
	}
}

// With a message above the summary, G still reaches the last kernel.
func TestLastKernelReachableUnderAMessage(t *testing.T) {
	d := &common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(), Now: time.Now}
	m := New(d)
	m.SetSize(78, 19)
	sum := phases.ProfileSummary{TotalCUDAUs: 1e6, Categories: map[string]float64{profile.CatGEMM: 1e6}, KernelCount: 20}
	for i := range 20 {
		sum.Top = append(sum.Top, phases.Kernel{Name: "kernel_" + string(rune('a'+i)), SelfCUDAUs: float64(1000 - i), Calls: 1, Category: profile.CatGEMM})
	}
	m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{phases.New(time.Now(), phases.KindProfileSummary, sum)}})
	m.msg = "Capture cancelled; stop_profile was sent so the server stops recording."
	m.Update(tea.KeyPressMsg{Code: 'G', Text: "G"})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "kernel_t") {
		t.Errorf("G does not reach the last kernel:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
}

// The pane captures at the plateau a run would: the latest sweep's for the
// campaign's model, TP and launch, and only one a capture can take (a
// hostile journal line said C=20,000,000; a TP4 run's plateau is not a
// TP8 campaign's).
func TestPanePlateauFromTheCampaignsRuns(t *testing.T) {
	m, _, _ := newPane(t)
	id := m.d.Campaign.RunIdentity()
	other := id
	other.TP = 4
	ev := func(kind string, data any) phases.Event { return phases.New(time.Now(), kind, data) }
	for _, tc := range []struct {
		name   string
		events []phases.Event
		want   string
	}{
		{"hostile", []phases.Event{ev(phases.KindMacroPlateau, phases.Plateau{Concurrency: 20_000_000})}, "(C=1)"},
		{"own run", []phases.Event{ev(phases.KindRunStarted, phases.RunStarted{Identity: id}),
			ev(phases.KindMacroPlateau, phases.Plateau{Concurrency: 16})}, "C=1,16"},
		{"another TP's run", []phases.Event{ev(phases.KindRunStarted, phases.RunStarted{Identity: other}),
			ev(phases.KindMacroPlateau, phases.Plateau{Concurrency: 32})}, "(C=1)"},
	} {
		m.Update(common.EventsMsg{At: time.Now(), Events: tc.events, Replayed: true})
		if v := ansi.Strip(m.View()); !strings.Contains(v, tc.want) {
			t.Errorf("%s: the idle view lacks %q:\n%s", tc.name, tc.want, v)
		}
	}
}

// A summary read from the journal at start is titled so; one a capture
// of this session sent (the campaign's run) is titled captured.
func TestPaneTitleSaysWhereTheSummaryCameFrom(t *testing.T) {
	m, _, _ := newPane(t)
	at := time.Now()
	sum := phases.New(at, phases.KindProfileSummary, phases.ProfileSummary{Level: 1})
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{sum}, Replayed: true})
	if v := ansi.Strip(m.titleLine(80)); !strings.Contains(v, "from the journal") {
		t.Errorf("a journal's summary: %q", v)
	}
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{sum}})
	if v := ansi.Strip(m.titleLine(80)); strings.Contains(v, "from the journal") || !strings.Contains(v, "captured") {
		t.Errorf("a live capture's summary: %q", v)
	}
}

// The idle text names the profiler's folder with {uid} explained: the
// campaign's folder is the host user's own (/tmp/vllm_profile-{uid}).
func TestIdleSaysWhatUIDIs(t *testing.T) {
	m, _, _ := newPane(t)
	m.SetSize(230, 19)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "reads /tmp/vllm_profile-{uid} ({uid}: the host user's id) on") {
		t.Errorf("idle view:\n%s", v)
	}
}

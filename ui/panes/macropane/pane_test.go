package macropane

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// clock is the fixed time the tests run at.
var clock0 = time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)

// simHost is a host that says it is simulated; the pane only asks it that
// (and dials through it when a sweep starts, which these tests don't).
type simHost struct{ remote.Host }

func (simHost) Simulated() bool { return true }
func (simHost) Name() string    { return "sim" }

func testDeps(t testing.TB, simulated bool) *common.Deps {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &common.Deps{
		Ctx:      ctx,
		Campaign: campaign.Defaults(),
		Session:  report.NewSession(ctx, nil),
		Styles:   common.NewStyles(common.DefaultTheme()),
		Keys:     common.DefaultKeyMap(),
		Now:      func() time.Time { return clock0 },
	}
	if simulated {
		d.Host = simHost{}
	}
	return d
}

func newPane(t testing.TB, w, h int, simulated bool) *Model {
	t.Helper()
	m := New(testDeps(t, simulated))
	m.SetSize(w, h)
	return m
}

// replay sends events to the pane the way the root does: in batches of
// what happened in each 250 ms window. It stops after the first n events
// (all when n < 0).
func replay(m *Model, evs []phases.Event, n int) {
	if n >= 0 && n < len(evs) {
		evs = evs[:n]
	}
	var batch []phases.Event
	var end time.Time
	for _, ev := range evs {
		if len(batch) > 0 && ev.Time.After(end) {
			m.Update(common.EventsMsg{At: end, Events: batch})
			batch = nil
		}
		if len(batch) == 0 {
			end = ev.Time.Add(250 * time.Millisecond)
		}
		batch = append(batch, ev)
	}
	if len(batch) > 0 {
		m.Update(common.EventsMsg{At: end, Events: batch})
	}
}

func plain(m *Model) string { return ansi.Strip(m.View()) }

func TestGoldenFinishedSweep100x30(t *testing.T) {
	m := newPane(t, 100, 30, true)
	replay(m, loadEvents(t), -1)
	panetest.Fits(t, m.View(), 100, 30)
	panetest.Golden(t, "finished-100x30", m.View())
}

func TestGoldenMidSweep100x30(t *testing.T) {
	evs := loadEvents(t)
	// Stop in the middle of the C=64 level.
	n := 0
	seen := 0
	for i, ev := range evs {
		if lv, ok := ev.Data.(phases.LevelStarted); ok && lv.Concurrency == 64 {
			seen = i
		}
		if seen > 0 && i > seen+5 {
			n = i
			break
		}
	}
	m := newPane(t, 100, 30, true)
	replay(m, evs, n)
	panetest.Fits(t, m.View(), 100, 30)
	panetest.Golden(t, "mid-100x30", m.View())
}

func TestIdleView(t *testing.T) {
	m := newPane(t, 80, 19, false)
	v := plain(m)
	if !strings.Contains(v, "no sweep yet — press s to start") {
		t.Fatalf("idle view:\n%s", v)
	}
	if strings.Contains(v, "SIMULATED") {
		t.Fatal("a real host is not SIMULATED")
	}
	if v2 := plain(newPane(t, 80, 19, true)); !strings.Contains(v2, "SIMULATED") {
		t.Fatalf("simulated host not labelled:\n%s", v2)
	}
	panetest.Fits(t, m.View(), 80, 19)
}

func TestFitsEverySize(t *testing.T) {
	evs := loadEvents(t)
	for _, sz := range [][2]int{{78, 19}, {80, 24}, {100, 30}, {120, 40}, {200, 50}, {60, 14}, {40, 10}, {20, 6}} {
		m := newPane(t, sz[0], sz[1], true)
		replay(m, evs, -1)
		m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroClientBound,
			phases.ClientBound{Concurrency: 256, Reason: "client used 95% of 2 cores"})}})
		panetest.Fits(t, m.View(), sz[0], sz[1])
	}
}

func TestLiveFiguresAndTable(t *testing.T) {
	evs := loadEvents(t)
	m := newPane(t, 100, 30, false)
	replay(m, evs, -1)
	if len(m.levels) != 9 || m.plateau == nil || m.plateau.Concurrency != 128 {
		t.Fatalf("levels %d plateau %+v", len(m.levels), m.plateau)
	}
	v := plain(m)
	for _, want := range []string{"plateau at C=128: 1,439 tok/s — doubling C adds <10%", "◀ plateau", "server running", "C=128 plateau"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	// Every tick became one sample in each series.
	ticks := 0
	for _, ev := range evs {
		if ev.Kind == phases.KindMacroTick {
			ticks++
		}
	}
	if m.samples != ticks || len(m.toks.v) != ticks {
		t.Fatalf("samples %d, want %d ticks", m.samples, ticks)
	}
}

func TestRollingMaxForgetsSpike(t *testing.T) {
	m := newPane(t, 80, 24, false)
	at := clock0
	tick := func(tpot float64) {
		at = at.Add(time.Second)
		m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindMacroTick,
			phases.MacroTick{Concurrency: 8, TPOTp50ms: tpot, TPOTp99ms: tpot, TTFTp50ms: 30, OutputTokS: 500})}})
	}
	tick(500) // a spike
	for i := 0; i < 10; i++ {
		tick(12)
	}
	if m.tpotChart.top != 500 {
		t.Fatalf("while the spike is on screen the top is the spike: %v", m.tpotChart.top)
	}
	l := m.layout(1)
	for i := 0; i < l.chartW; i++ {
		tick(12)
	}
	if m.tpotChart.top != 12 {
		t.Fatalf("after the spike scrolled away the top is %v, want 12", m.tpotChart.top)
	}
}

func TestServerUnavailableShown(t *testing.T) {
	m := newPane(t, 80, 24, false)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroServer,
		phases.ServerStats{Available: false, Note: "server metrics unavailable"})}})
	if v := plain(m); !strings.Contains(v, "server metrics unavailable") {
		t.Fatalf("view:\n%s", v)
	}
}

func TestClientBoundBanner(t *testing.T) {
	m := newPane(t, 100, 30, false)
	replay(m, loadEvents(t), -1)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroClientBound,
		phases.ClientBound{Concurrency: 256, Reason: "p99 send lag 14.2 ms is over 10 ms"})}})
	v := plain(m)
	if !strings.Contains(v, "CLIENT-BOUND at C=256: p99 send lag 14.2 ms is over 10 ms") {
		t.Fatalf("no banner:\n%s", v)
	}
	if !strings.Contains(v, "client-bound") {
		t.Fatalf("level row not flagged:\n%s", v)
	}
}

func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestMarkerJournalledAndShown(t *testing.T) {
	m := newPane(t, 100, 30, false)
	replay(m, loadEvents(t), 40)
	m.Update(press("m"))
	if !m.Typing() {
		t.Fatal("m opens the marker input")
	}
	for _, r := range "quant fp8" {
		m.Update(press(string(r)))
	}
	if !m.Typing() {
		t.Fatal("typing q must not leave the input")
	}
	_, cmd := m.Update(press("enter"))
	if m.Typing() {
		t.Fatal("enter closes the input")
	}
	// The marker is journalled by the command, not in Update.
	if n := len(m.d.Session.Events()); n != 0 {
		t.Fatalf("%d events journalled inside Update", n)
	}
	_, cmd = m.Update(cmd())
	if msg := cmd(); msg.(common.StatusMsg).Error {
		t.Fatalf("status: %+v", msg)
	}
	if v := plain(m); strings.Contains(v, "◆quant fp8") {
		t.Fatalf("marker on the chart before the session handed it back:\n%s", v)
	}
	var got []phases.Marker
	for _, ev := range m.d.Session.Events() {
		if mk, ok := ev.Data.(phases.Marker); ok {
			m.Update(common.EventsMsg{At: ev.Time, Events: []phases.Event{ev}})
			got = append(got, mk)
			if !ev.Time.Equal(clock0) {
				t.Errorf("marker stamped %v, want the pane's clock", ev.Time)
			}
		}
	}
	if len(got) != 1 || got[0].Label != "quant fp8" || got[0].Pane != "macro" {
		t.Fatalf("journalled markers: %+v", got)
	}
	if v := plain(m); !strings.Contains(v, "◆quant fp8") {
		t.Fatalf("marker not on the chart axis:\n%s", v)
	}
	// esc cancels without recording.
	m.Update(press("m"))
	m.Update(press("x"))
	m.Update(press("esc"))
	if m.Typing() || len(m.d.Session.Events()) != 1 {
		t.Fatalf("esc must cancel: typing %v, events %d", m.Typing(), len(m.d.Session.Events()))
	}
}

func TestScrollLevels(t *testing.T) {
	m := newPane(t, 80, 19, false)
	replay(m, loadEvents(t), -1)
	v := plain(m)
	if !strings.Contains(v, "of 9, j/k]") {
		t.Fatalf("a table that does not fit says so:\n%s", v)
	}
	if !strings.Contains(v, " 256 ") {
		t.Fatalf("the newest level shows by default:\n%s", v)
	}
	for i := 0; i < 20; i++ {
		m.Update(press("k"))
	}
	v = plain(m)
	if !strings.Contains(v, "   1 ") || strings.Contains(v, " 256 ") {
		t.Fatalf("k scrolls to the first level:\n%s", v)
	}
	m.Update(press("j"))
	if m.levelList.Offset == 0 {
		t.Fatal("j scrolls back towards the newest")
	}
}

// g and G jump to the first and the newest level; ctrl+u and ctrl+d page.
func TestScrollLevelsJumpAndPage(t *testing.T) {
	m := newPane(t, 80, 19, false)
	replay(m, loadEvents(t), -1)
	m.Update(press("g"))
	if v := plain(m); !strings.Contains(v, "   1 ") || strings.Contains(v, " 256 ") {
		t.Fatalf("g shows the first level:\n%s", v)
	}
	m.Update(press("G"))
	if v := plain(m); strings.Contains(v, "   1 ") || !strings.Contains(v, " 256 ") || m.levelList.Offset != 0 {
		t.Fatalf("G follows the newest level again (scroll %d):\n%s", m.levelList.Offset, v)
	}
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	up := m.levelList.Offset
	if up < 1 {
		t.Fatal("ctrl+u did not scroll")
	}
	m.Update(tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl})
	if m.levelList.Offset >= up {
		t.Fatalf("ctrl+d did not scroll back: %d, was %d", m.levelList.Offset, up)
	}
}

func TestSteeringWithoutSweep(t *testing.T) {
	m := newPane(t, 80, 24, false)
	for _, k := range []string{"p", "+", "-"} {
		_, cmd := m.Update(press(k))
		if cmd == nil {
			t.Fatalf("%s gives no feedback", k)
		}
		if st := cmd().(common.StatusMsg); !strings.Contains(st.Text, "no sweep running") {
			t.Fatalf("%s: %q", k, st.Text)
		}
	}
	if m.Busy() {
		t.Fatal("not busy without a sweep")
	}
}

func TestHelpListsEveryKey(t *testing.T) {
	m := newPane(t, 80, 24, false)
	var keys []string
	for _, col := range m.FullHelp() {
		for _, b := range col {
			keys = append(keys, b.Help().Key)
		}
	}
	joined := strings.Join(keys, " ")
	for _, k := range []string{"s", "p", "+", "-", "m", "enter", "esc", "j/↓", "k/↑"} {
		if !strings.Contains(joined, k) {
			t.Errorf("help lacks %q: %v", k, keys)
		}
	}
}

func TestLevelFlags(t *testing.T) {
	m := newPane(t, 80, 24, false)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 16, Completed: 10,
			Notes: []string{"concurrency changed live from 8 to 16 at 1.2s"}}),
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 32, Completed: 10,
			Notes: []string{"paused for 3.0s during the level; throughput includes the pause"}}),
	}})
	v := plain(m)
	if !strings.Contains(v, " steered") || !strings.Contains(v, " paused") {
		t.Fatalf("steered and paused levels are flagged:\n%s", v)
	}
}

// At 80 columns a level that is both the plateau and client-bound keeps
// both flags, in their short form.
func TestLevelFlagsFitAt80(t *testing.T) {
	m := newPane(t, 80, 24, false)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 128, Completed: 10, OutputThroughput: 1400,
			MedianTTFTms: 290, P99TTFTms: 309, MedianTPOTms: 84.4, P99TPOTms: 88.1, P99ITLms: 168, ClientBound: true}),
		phases.New(clock0, phases.KindMacroPlateau, phases.Plateau{Concurrency: 128, OutputThroughput: 1400}),
	}})
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "128 ") {
			if !strings.Contains(l, "◀") || !strings.Contains(l, "bound") {
				t.Fatalf("row lost a flag at 80 columns: %q", l)
			}
			return
		}
	}
	t.Fatalf("no C=128 row:\n%s", plain(m))
}

// Warnings and each distinct error reach the pane as banners, the error
// with what the server said, and the pane still fits at 80×24.
func TestWarningsAndErrorsShown(t *testing.T) {
	m := newPane(t, 80, 24, false)
	replay(m, loadEvents(t), -1)
	ex := phases.FailureExample{Kind: "http_400", Status: 400, Body: `{"message":"maximum context length is 128"}`, Count: 3}
	lv := phases.LevelResult{Concurrency: 512, Completed: 5, Failed: 3, Failures: map[string]int{"http_400": 3},
		Warnings: []string{"4 of 5 completed requests had no usage", "input tokens estimated"}, FailureExamples: []phases.FailureExample{ex}}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroWarning, phases.MacroWarning{Text: "the server has no /tokenize"}),
		phases.New(clock0, phases.KindMacroLevel, lv),
	}})
	v := plain(m)
	for _, want := range []string{"error (C=512): http_400 ×3: {\"message\":\"maximum context", "3 warnings; latest: C=512: 4 of 5"} {
		if !strings.Contains(v, want) {
			t.Errorf("no %q in:\n%s", want, v)
		}
	}
	panetest.Fits(t, m.View(), 80, 24)
	// The same error at the next level adds to its count, not a line.
	lv.Concurrency = 1024
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroLevel, lv)}})
	if v := plain(m); !strings.Contains(v, "error (C=512): http_400 ×6") || strings.Contains(v, "distinct errors") {
		t.Errorf("repeated error:\n%s", v)
	}
}

// Before a sweep, in the middle of one and after it, the pane fills the
// boxes of an 80×24 and a 120×40 screen; the idle and finished views at
// 80×24 are kept as goldens.
func TestGoldenStatesFillTheirBoxes(t *testing.T) {
	m := newPane(t, 80, 20, false)
	panetest.FitsBoxes(t, m)
	m.SetSize(80, 20)
	panetest.Golden(t, "idle-80x20", m.View())
	evs := loadEvents(t)
	replay(m, evs, len(evs)/2)
	panetest.FitsBoxes(t, m)
	replay(m, evs[len(evs)/2:], -1)
	panetest.FitsBoxes(t, m)
	m.SetSize(80, 20)
	panetest.Golden(t, "finished-80x20", m.View())
}

// A sweep the campaign run started shows here from its events; s does not
// start a second one beside it.
func TestSweepStartedElsewhere(t *testing.T) {
	m := newPane(t, 80, 20, false)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 4}),
	}})
	_, cmd := m.Update(press("s"))
	if m.Busy() || m.sweep != nil {
		t.Fatal("s started a second sweep")
	}
	if st := cmd().(common.StatusMsg); !strings.Contains(st.Text, "started elsewhere") {
		t.Errorf("status %q", st.Text)
	}
	if v := plain(m); !strings.Contains(v, "Macro sweep · running") {
		t.Errorf("title:\n%s", v)
	}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone})}})
	if m.r.Elsewhere() {
		t.Error("the other run's finish not seen")
	}
}

// TestNewSweepStartsANewTimeline: a second sweep (started here, by the
// run, or found in the journal) starts with empty charts and no marks of
// the first: no old plateau marker, no "SLO met up to" of the first.
func TestNewSweepStartsANewTimeline(t *testing.T) {
	m := newPane(t, 100, 30, true)
	replay(m, loadEvents(t), -1)
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroSLO, phases.SLOMet{Spec: "ttft=2s", MaxConcurrency: 32, Text: "SLO met up to C=32"})}})
	if m.samples == 0 || len(m.marks) == 0 || m.slo == nil || !strings.Contains(plain(m), "plateau") {
		t.Fatalf("the first sweep: %d samples, %d marks, slo %v", m.samples, len(m.marks), m.slo)
	}
	// A sweep that ended before measuring anything (no server) leaves the
	// last one's on screen.
	failed := clock0.Add(30 * time.Minute)
	m.Update(common.EventsMsg{At: failed, Events: []phases.Event{
		phases.New(failed, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(failed, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeFailed, Err: "cannot reach the server"}),
	}})
	if m.samples == 0 || m.plateau == nil || len(m.levels) == 0 {
		t.Fatal("a sweep that measured nothing wiped the last one")
	}
	at := clock0.Add(time.Hour)
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{
		phases.New(at, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(at, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 1}),
	}})
	if m.samples != 0 || len(m.marks) != 1 || m.marks[0].Label != "C=1" || m.slo != nil || m.plateau != nil || len(m.levels) != 0 {
		t.Fatalf("the second sweep: %d samples, marks %+v, slo %v", m.samples, m.marks, m.slo)
	}
	if v := plain(m); strings.Contains(v, "plateau") || strings.Contains(v, "SLO met") {
		t.Fatalf("the first sweep's plateau or SLO is still shown:\n%s", v)
	}
}

// A reopened journal whose sweep never finished (the cockpit was killed
// mid-level) runs nothing now: s is not refused as "started elsewhere".
func TestReplayedUnfinishedSweepIsNotRunning(t *testing.T) {
	m := newPane(t, 80, 20, false)
	m.Update(common.EventsMsg{At: clock0, Replayed: true, Events: []phases.Event{
		phases.New(clock0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 4}),
	}})
	if m.r.Elsewhere() {
		t.Fatal("a replayed start counts as a sweep under way")
	}
}

// While the campaign's run is under way the idle pane says the run starts
// the sweep, not "press s"; once it ends, s again.
func TestIdlePaneSaysTheRunStartsTheSweep(t *testing.T) {
	m := newPane(t, 80, 20, true)
	at := time.Now()
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindRunStarted, phases.RunStarted{})}})
	if v := ansi.Strip(m.View()); strings.Contains(v, "press s") || !strings.Contains(v, "the campaign's run starts it") {
		t.Fatalf("during the run:\n%s", v)
	}
	m.Update(common.EventsMsg{At: at, Events: []phases.Event{phases.New(at, phases.KindRunFinished, phases.RunFinished{})}})
	if v := ansi.Strip(m.View()); !strings.Contains(v, "press s to start") {
		t.Fatalf("after the run:\n%s", v)
	}
}

package ui

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

type fakeSaver struct {
	kicks, writes int
}

func (f *fakeSaver) Kick() { f.kicks++ }
func (f *fakeSaver) WriteNow() (string, time.Time, error) {
	f.writes++
	return "nb.md", time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), nil
}

func newTestRoot(t testing.TB) (*Model, *fakeSaver, *report.Session) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sess := report.NewSession(ctx, nil)
	c := campaign.Defaults()
	c.Name = "unit"
	fixed := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d := &common.Deps{Ctx: ctx, Host: local.New(), Campaign: c, Session: sess,
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return fixed }}
	fs := &fakeSaver{}
	m := New(d, fs)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return m, fs, sess
}

func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab}
		case "shift+tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "ctrl+c":
			msg = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		_, last = m.Update(msg)
	}
	return last
}

// run executes a command and feeds its message back, as the program would.
func run(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			run(m, c)
		}
		return
	}
	if msg != nil {
		m.Update(msg)
	}
}

func TestPaneSwitching(t *testing.T) {
	m, _, _ := newTestRoot(t)
	press(m, "3")
	if m.active != 2 {
		t.Fatalf("key 3: active pane %d, want 2", m.active)
	}
	press(m, "tab", "tab")
	if m.active != 4 {
		t.Fatalf("tab twice from 3: active %d, want 4", m.active)
	}
	press(m, "shift+tab")
	if m.active != 3 {
		t.Fatalf("shift+tab: active %d, want 3", m.active)
	}
	press(m, "tab", "tab", "tab")
	if m.active != 0 {
		t.Fatalf("tab wraps: active %d, want 0", m.active)
	}
}

func TestQDoesNotQuitWhileTypingANote(t *testing.T) {
	m, fs, sess := newTestRoot(t)
	press(m, "n")
	if !m.noting {
		t.Fatal("n did not open the note input")
	}
	if cmd := press(m, "q"); cmd != nil {
		if _, isQuit := cmd().(tea.QuitMsg); isQuit {
			t.Fatal("q quit while typing a note")
		}
	}
	press(m, "u", "p")
	if got := m.note.Value(); got != "qup" {
		t.Fatalf("note text %q, want qup", got)
	}
	run(m, press(m, "enter"))
	if m.noting {
		t.Fatal("enter did not close the note input")
	}
	evs := sess.Events()
	if len(evs) != 1 || evs[0].Kind != phases.KindNotesNote || evs[0].Data.(phases.Note).Text != "qup" {
		t.Fatalf("journalled events %+v, want one note 'qup'", evs)
	}
	if fs.kicks == 0 {
		t.Error("a saved note did not trigger the autosave")
	}
	if !strings.Contains(m.status, "note saved") {
		t.Errorf("status %q does not acknowledge the note", m.status)
	}
}

func TestWriteKeyShowsWhereAndWhen(t *testing.T) {
	m, fs, _ := newTestRoot(t)
	run(m, press(m, "w"))
	if fs.writes != 1 {
		t.Fatalf("w wrote %d times, want 1", fs.writes)
	}
	if !strings.Contains(m.status, "nb.md") || !strings.Contains(m.status, "12:00:00") {
		t.Fatalf("status %q lacks the path and time", m.status)
	}
}

func TestQuitKeys(t *testing.T) {
	m, _, _ := newTestRoot(t)
	cmd := press(m, "q")
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q did not quit when nothing runs")
	}
	m2, _, _ := newTestRoot(t)
	cmd = press(m2, "ctrl+c")
	if cmd == nil {
		t.Fatal("ctrl+c returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("ctrl+c did not quit")
	}
}

func TestTooSmallScreen(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.Update(tea.WindowSizeMsg{Width: 79, Height: 30})
	if got := m.render(); !strings.Contains(got, "too small: have 79×30, need 80×24") {
		t.Fatalf("79 columns: %q", got)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	got := m.render()
	if strings.Contains(got, "too small") {
		t.Fatalf("80×24 is big enough: %q", got)
	}
	if n := strings.Count(got, "\n") + 1; n != 24 {
		t.Fatalf("80×24 screen has %d lines, want 24", n)
	}
}

func TestHelpTogglesAndShowsPaneKeys(t *testing.T) {
	m, _, _ := newTestRoot(t)
	press(m, "?")
	if !m.showHelp {
		t.Fatal("? did not open the help")
	}
	if got := m.render(); !strings.Contains(got, "write notebook") || !strings.Contains(got, "add note") {
		t.Fatalf("help lacks the global keys:\n%s", got)
	}
	press(m, "esc")
	if m.showHelp {
		t.Fatal("esc did not close the help")
	}
}

func TestEventsAreRoutedToTheirPane(t *testing.T) {
	m, fs, _ := newTestRoot(t)
	now := time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
	b := batchMsg{at: now, events: []phases.Event{
		phases.New(now, phases.KindSessionConn, phases.ConnState{Host: "gpu1", State: "up", RTTms: 3}),
		phases.New(now, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 4}),
		phases.New(now, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
	}}
	m.Update(b)
	if !m.hasConn || m.conn.State != "up" {
		t.Fatalf("connection state not taken: %+v", m.conn)
	}
	if !m.running.Open(phases.Macro) {
		t.Fatal("phase start not tracked")
	}
	if fs.kicks == 0 {
		t.Fatal("a level result did not kick the autosave")
	}
	if !strings.Contains(m.header(), "up 3 ms") {
		t.Fatalf("header lacks the round-trip time: %q", m.header())
	}
}

// At 80×24 the full help of every pane still shows every global key (a pane
// with many keys must not push them off the screen).
func TestFullHelpShowsGlobalKeysAt80Columns(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, "?")
	for i := range m.panes {
		m.active = i
		got := m.render()
		cols := append(m.globalColumns(), m.focused().FullHelp()...)
		for _, col := range cols {
			for _, b := range col {
				if !helpShows(got, b) {
					t.Errorf("%s: full help lacks %q %q as whole words:\n%s", m.table[m.active].Title, b.Help().Key, b.Help().Desc, got)
				}
			}
		}
	}
}

// While a text input has the keys, the help line offers only what works
// there: not the global keys, which the input takes as text.
func TestHelpLineWhileTyping(t *testing.T) {
	m, _, _ := newTestRoot(t)
	if got := m.helpLine(); !strings.Contains(got, "go to pane") {
		t.Fatalf("help line lacks the global keys: %q", got)
	}
	press(m, "n")
	if got := m.helpLine(); !strings.Contains(got, "save note") || strings.Contains(got, "go to pane") {
		t.Errorf("help line while typing a note: %q", got)
	}
	press(m, "esc", "2", "m")
	if !m.focused().Typing() {
		t.Fatal("m opened no marker input")
	}
	if got := m.helpLine(); !strings.Contains(got, "save marker") || !strings.Contains(got, "quit now") || strings.Contains(got, "go to pane") {
		t.Errorf("help line while typing a marker: %q", got)
	}
}

// On a screen too small for the cockpit, the quit question still shows.
func TestTooSmallScreenShowsTheQuitQuestion(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.Update(tea.WindowSizeMsg{Width: 70, Height: 20})
	m.confirmQuit = true // q while a phase runs
	if got := m.render(); !strings.Contains(got, "y quits") {
		t.Fatalf("the quit question is hidden: %q", got)
	}
}

func TestPaneKeysDoNotActBehindTheHelp(t *testing.T) {
	m, _, _ := newTestRoot(t)
	press(m, "2", "?")
	if cmd := press(m, "s"); cmd != nil {
		t.Fatal("s reached the Macro pane while the help covered it")
	}
	if !m.showHelp {
		t.Fatal("a pane key closed the help")
	}
	press(m, "esc")
	if m.showHelp {
		t.Fatal("esc did not close the help")
	}
}

// helpShows reports whether the rendered help has b's key and then its
// description, each as a whole word on one line ("g" is not found in
// "ctrl+g", nor "top" in "stop").
func helpShows(help string, b key.Binding) bool {
	h := b.Help()
	re := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(h.Key) + `\s+` + regexp.QuoteMeta(h.Desc) + `(\s|$)`)
	for _, line := range strings.Split(ansi.Strip(help), "\n") {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

func TestHelpShowsWholeWords(t *testing.T) {
	g := key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "top"))
	for _, c := range []struct {
		help string
		want bool
	}{
		{"g   top", true},
		{"x  stop    g  top", true},
		{"ctrl+g  top", false},
		{"g  stop", false},
		{"g\ntop", false},
	} {
		if helpShows(c.help, g) != c.want {
			t.Errorf("helpShows(%q) = %v", c.help, !c.want)
		}
	}
}

// At 80 columns the header keeps host, link and clock whole and shortens
// the campaign's name, its remark first; the status bar names the
// notebook by its file name, not its folder.
func TestHeaderAndStatusBarAt80Columns(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.d.Campaign.Name = "profdeck demo (SIMULATED deployment of eight GPUs)"
	m.d.Campaign.Notebook = "/tmp/profdeck-demo-123456789/a/long/folder/notebook.md"
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	h := m.header()
	if !strings.Contains(h, "profdeck demo │") || strings.Contains(h, "(SIMULATED") || !strings.Contains(h, "│ 0:00") {
		t.Fatalf("header at 80 columns: %q", h)
	}
	if components.Width(h) > 80 {
		t.Fatalf("header is %d cells", components.Width(h))
	}
	m.running.See(phases.New(time.Now(), phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}))
	m.campaignStep = "leave_server"
	sb := m.statusBar()
	if !strings.Contains(sb, "notebook notebook.md") || strings.Contains(sb, "/tmp/") {
		t.Fatalf("status bar: %q", sb)
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 40})
	if !strings.Contains(m.header(), "profdeck demo (SIMULATED deployment of eight GPUs)") {
		t.Fatalf("a wide header keeps the whole name: %q", m.header())
	}
}

// A tab's "*" is explained where it is seen: the running phase's tab is
// marked, the status bar says "* running: PHASE" whole at 80×24 and
// 120×40 beside the notebook's name, and the help says what the mark means.
func TestTabMarkExplained(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.d.Campaign.Notebook = "/tmp/profdeck-demo-1/profdeck-demo.md"
	m.running.See(phases.New(time.Now(), phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}))
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m.lastSave = time.Date(2026, 12, 5, 20, 6, 24, 0, time.UTC)
		if sb := ansi.Strip(m.statusBar()); !strings.Contains(sb, "│ * running: macro") {
			t.Errorf("%dx%d: the status bar does not say what the tab's * is: %q", size[0], size[1], sb)
		}
		// The Macro tab is marked though the run began elsewhere (the
		// campaign's), as the status bar names it.
		if tabs := ansi.Strip(m.tabs()); !strings.Contains(tabs, " 2 Macro* ") || strings.Contains(tabs, " 3 Micro*") {
			t.Errorf("%dx%d: the tabs do not mark the running phase alone: %q", size[0], size[1], tabs)
		}
	}
	m.showHelp = true
	if v := ansi.Strip(m.render()); !strings.Contains(v, "a tab's * : its phase is running") {
		t.Errorf("the help does not say what a tab's * is:\n%s", v)
	}
}

// The opening notice (what the simulated host's quick settings set) shows
// on the status row alone as the cockpit opens, at 80×24 (the keys' short
// names) and at 120×40 (whole keys), with the key help under it, until its
// time is up; then the status bar comes back. A status said meanwhile
// replaces it. The whole sentence is on stderr (TestTUISaysQuickSettingsWhole).
func TestOpeningNoticeOnOneRow(t *testing.T) {
	set := []string{"macro.requests 16", "macro.output_len 64", "macro.warmup 2", "sim.load_time 20s"}
	for _, c := range []struct {
		w, h int
		want string
	}{
		{80, 24, "host sim quick settings: requests 16, output_len 64, warmup 2, load_time 20s"},
		{120, 40, "host sim quick settings (left at default): macro.requests 16, macro.output_len 64, macro.warmup 2, sim.load_time 20s"},
	} {
		m, _, _ := newTestRoot(t)
		m.Notice(quickNotice(set))
		m.Init()
		m.Update(tea.WindowSizeMsg{Width: c.w, Height: c.h})
		lines := strings.Split(ansi.Strip(m.render()), "\n")
		if len(lines) != c.h {
			t.Fatalf("%d×%d: %d lines", c.w, c.h, len(lines))
		}
		for _, l := range lines {
			if components.Width(l) > c.w {
				t.Fatalf("%d×%d: a line of %d cells: %q", c.w, c.h, components.Width(l), l)
			}
		}
		if got := strings.TrimRight(lines[c.h-2], " "); got != c.want {
			t.Errorf("%d×%d: status row %q, want %q", c.w, c.h, got, c.want)
		}
		if help := ansi.Strip(m.helpLine()); help == "" || lines[c.h-1] != help || !strings.Contains(help, " • ") {
			t.Errorf("%d×%d: the key help is not under the notice: %q", c.w, c.h, lines[c.h-1])
		}
		m.Update(clearStatusMsg{seq: m.statusSeq})
		lines = strings.Split(ansi.Strip(m.render()), "\n")
		if !strings.HasPrefix(lines[c.h-2], "? help") || strings.Contains(lines[c.h-1], "quick") {
			t.Errorf("%d×%d: after the notice: %q / %q", c.w, c.h, lines[c.h-2], lines[c.h-1])
		}
	}
	m, _, _ := newTestRoot(t)
	m.Notice(quickNotice(set))
	m.Init()
	m.Update(common.StatusMsg{Text: "notebook written"})
	if sb := ansi.Strip(m.statusBar()); sb != "notebook written" {
		t.Errorf("a status said during the notice: %q", sb)
	}
}

// A notice of one setting has no comma after it, and nothing at all is no
// notice.
func TestQuickNoticeOfOneSetting(t *testing.T) {
	if got := components.Fields(quickNotice([]string{"macro.warmup 2"}), " ", 80); got != "host sim quick settings (left at default): macro.warmup 2" {
		t.Errorf("one setting: %q", got)
	}
	if quickNotice(nil) != nil {
		t.Error("a notice with no setting")
	}
}

// The header says the server's state apart from the host's link: loading
// after the server starts, ready once it is; and the help explains a
// tab's *.
func TestHeaderSaysServerLoadingAndHelpExplainsStar(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	now := time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
	m.Update(batchMsg{at: now, events: []phases.Event{phases.New(now, phases.KindLoadServer, phases.ServerEvent{Action: "start"})}})
	if h := ansi.Strip(m.header()); !strings.Contains(h, "server loading") || components.Width(h) > 80 {
		t.Fatalf("header while the server loads: %q", h)
	}
	m.Update(batchMsg{at: now, events: []phases.Event{phases.New(now, phases.KindLoadMilestone, phases.Milestone{Stage: "ready"})}})
	if h := ansi.Strip(m.header()); !strings.Contains(h, "server ready") {
		t.Fatalf("header once ready: %q", h)
	}
	press(m, "?")
	if got := ansi.Strip(m.render()); !strings.Contains(got, "a tab's * : its phase is running") {
		t.Fatalf("the help does not explain the tab's *:\n%s", got)
	}
}

// busyPane is a pane whose own run is going (the Notes pane running the
// campaign).
type busyPane struct{ common.Component }

func (busyPane) Busy() bool { return true }

// A pane busy with its own run has its tab marked, and the status bar names
// it with the running phases: the tabs and the status bar say the same.
func TestTabMarksAndStatusBarAgree(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m.running.See(phases.New(time.Now(), phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}))
	notes := len(m.panes) - 1
	m.panes[notes] = busyPane{m.panes[notes]}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	tabs, sb := ansi.Strip(m.tabs()), ansi.Strip(m.statusBar())
	if !strings.Contains(tabs, " 2 Macro* ") || !strings.Contains(tabs, " 6 Notes* ") {
		t.Fatalf("tabs %q", tabs)
	}
	if !strings.Contains(sb, "* running: macro,notes") {
		t.Errorf("the status bar does not name every marked tab: %q", sb)
	}
}

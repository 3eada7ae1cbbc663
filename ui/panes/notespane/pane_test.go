package notespane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/ui/panes/panetest"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.Local)

func deps(t testing.TB) (*common.Deps, *report.Session) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := report.NewSession(ctx, nil)
	return &common.Deps{
		Ctx: ctx, Session: s, Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: func() time.Time { return t0 },
	}, s
}

func ev(sec int, kind string, d any) phases.Event {
	return phases.New(t0.Add(time.Duration(sec)*time.Second), kind, d)
}

func plain(s string) []string { return strings.Split(ansi.Strip(s), "\n") }

func TestBudgetAndNotes(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(78, 19)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "no inputs measured yet") || !strings.Contains(v, "missing: TPOT at C=1 (macro), all-reduce at M=1 (NCCL), GEMMs at M=1 (micro)") {
		t.Fatalf("empty pane:\n%s", v)
	}
	if !strings.Contains(v, "No notes yet") {
		t.Fatalf("empty pane:\n%s", v)
	}

	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 12.40, Completed: 12}),
		ev(2, phases.KindNotesNote, phases.Note{Text: "single stream looks slow", Pane: "Macro"}),
		ev(3, phases.KindNotesMarker, phases.Marker{Label: "spec decode on", Pane: "Macro"}),
	}})
	v = ansi.Strip(m.View())
	for _, want := range []string{"TPOT 12.40 ms", "unsplit 12.40 100%", "missing: all-reduce at M=1 (NCCL), GEMMs at M=1 (micro)",
		"09:00:02 Macro   single stream looks slow", "▲ spec decode on", "Notes and markers (2)"} {
		if !strings.Contains(v, want) {
			t.Fatalf("lacks %q:\n%s", want, v)
		}
	}

	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(4, phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, TotalMs: 6.386}),
		ev(5, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3500}),
		ev(6, phases.KindMacroLevel, phases.LevelResult{Concurrency: 128, MedianTPOTms: 80.9}),
		ev(7, phases.KindMacroPlateau, phases.Plateau{Concurrency: 128, OutputThroughput: 1536}),
		ev(8, phases.KindProfileSummary, phases.ProfileSummary{TotalCUDAUs: 1e6, CommunicationShare: 0.515, CommPerStepUs: 6386}),
	}})
	v = m.View()
	panetest.Fits(t, v, 78, 19)
	s := ansi.Strip(v)
	for _, want := range []string{"all-reduce 6.39 52%", "GEMM 3.50 28%", "rest 2.51 20%",
		"plateau C=128: ░░░░░░░░ unsplit 100% of 80.90 ms median", "missing: all-reduce at M=128 (NCCL), GEMMs at M=128 (micro)"} {
		if !strings.Contains(s, want) {
			t.Fatalf("lacks %q:\n%s", want, s)
		}
	}
	// The bar is the pane's width and split 51.5 : 28.2 : 20.3.
	bars := 0
	for _, l := range plain(v) {
		if strings.HasPrefix(l, "█") && !strings.Contains(l, " ") {
			bars++
			if n := strings.Count(l, "█"); n != 40 || strings.Count(l, "▓") != 22 || strings.Count(l, "░") != 16 {
				t.Fatalf("bar %q", l)
			}
		}
	}
	if bars != 1 {
		t.Fatalf("%d bars:\n%s", bars, s)
	}
}

func TestScrollingAndFollow(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(78, 19)
	var evs []phases.Event
	for i := 0; i < 40; i++ {
		evs = append(evs, ev(i, phases.KindNotesNote, phases.Note{Text: fmt.Sprintf("note number %02d", i), Pane: "Load"}))
	}
	m.Update(common.EventsMsg{Events: evs})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "note number 39") || strings.Contains(v, "note number 00") {
		t.Fatalf("does not follow the newest note:\n%s", v)
	}
	m.Update(tea.KeyPressMsg{Code: 'g', Text: "g"})
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "note number 00") || strings.Contains(v, "note number 39") {
		t.Fatalf("g does not go to the top:\n%s", v)
	}
	m.Update(tea.KeyPressMsg{Code: 'j', Text: "j"})
	if v = ansi.Strip(m.View()); strings.Contains(v, "note number 00") || !strings.Contains(v, "note number 01") {
		t.Fatalf("j does not scroll:\n%s", v)
	}
	// Scrolled up, a new note does not pull the view down.
	m.Update(common.EventsMsg{Events: []phases.Event{ev(50, phases.KindNotesNote, phases.Note{Text: "late"})}})
	if v = ansi.Strip(m.View()); !strings.Contains(v, "note number 01") {
		t.Fatalf("view jumped:\n%s", v)
	}
	m.Update(tea.KeyPressMsg{Code: 'G', Text: "G"})
	if v = ansi.Strip(m.View()); !strings.Contains(v, "late") {
		t.Fatalf("G does not go to the bottom:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	// Long notes wrap within the width.
	m.Update(common.EventsMsg{Events: []phases.Event{ev(60, phases.KindNotesNote, phases.Note{Text: strings.Repeat("word ", 60)})}})
	panetest.Fits(t, m.View(), 78, 19)
	m.SetSize(120, 40)
	panetest.Fits(t, m.View(), 120, 40)
}

func TestNotebookStatus(t *testing.T) {
	d, _ := deps(t)
	path := filepath.Join(t.TempDir(), "k25.md")
	d.Campaign = campaign.Defaults()
	d.Campaign.Notebook = path
	m := New(d)
	m.SetSize(78, 19)
	if v := ansi.Strip(m.View()); !strings.Contains(v, "k25.md · not written yet (w writes it)") || !strings.Contains(v, "notebook: …") {
		t.Fatalf("before a write:\n%s", v)
	}
	saved := func(at time.Time, failed bool, err string) {
		m.Update(common.EventsMsg{At: at, Events: []phases.Event{
			phases.New(at, phases.KindNotesSaved, phases.NotebookSaved{Path: path, Failed: failed, Err: err})}})
	}
	saved(t0, false, "")
	m.Update(common.TickMsg{At: t0.Add(12 * time.Second)})
	if v := ansi.Strip(m.View()); !strings.Contains(v, "k25.md · written 09:00:00 (12s ago)") {
		t.Fatalf("after a write:\n%s", v)
	}
	saved(t0.Add(time.Minute), true, "disk full")
	m.SetSize(120, 36)
	if v := ansi.Strip(m.View()); !strings.Contains(v, "last write failed (previous 09:00:00): disk full") {
		t.Fatalf("after a failed write:\n%s", v)
	}
}

func TestResumedCampaignShowsEarlierNotesOnce(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "c.jsonl")
	j, err := report.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(ev(1, phases.KindNotesNote, phases.Note{Text: "from yesterday", Pane: "Macro"}))
	j.Append(ev(2, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 12.4}))
	j.Close()
	j, err = report.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := report.NewSession(ctx, j)
	today := ev(3, phases.KindNotesNote, phases.Note{Text: "today"})
	s.Record(today)
	d, _ := deps(t)
	d.Session = s
	m := New(d)
	m.SetSize(78, 19)
	// The root replays the journal at start, then delivers what was
	// recorded in this run.
	m.Update(common.EventsMsg{Events: s.Events()})
	m.Update(common.EventsMsg{Events: []phases.Event{today}})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "from yesterday") || strings.Count(v, "today") != 1 || !strings.Contains(v, "TPOT 12.40 ms") {
		t.Fatalf("resumed pane:\n%s", v)
	}
}

func TestJournalFailureIsShown(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(78, 19)
	m.Update(common.EventsMsg{Events: []phases.Event{ev(1, phases.KindSessionError, phases.ErrorEvent{Where: "journal", Err: "journal c.jsonl: write: no space left on device"})}})
	v := m.View()
	panetest.Fits(t, v, 78, 19)
	if !strings.Contains(ansi.Strip(v), "journal not written: journal c.jsonl: write: no space left on device") {
		t.Fatalf("%s", ansi.Strip(v))
	}
}

// A note typed in the Server/Load pane shows the pane's whole name, and the
// other notes line up with it.
func TestNoteNamesTheWholePane(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(78, 19)
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindNotesNote, phases.Note{Text: "weights at 40 GiB/min", Pane: "Server/Load"}),
		ev(2, phases.KindNotesNote, phases.Note{Text: "sweep looks flat", Pane: "Macro"}),
	}})
	v := ansi.Strip(m.View())
	for _, want := range []string{"09:00:01 Server/Load weights at 40 GiB/min", "09:00:02 Macro       sweep looks flat"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
	panetest.Fits(t, m.View(), 78, 19)
}

// The budget is the whole split of the level's mean TPOT: the title says
// which TPOT (mean, median beside), the legend each part and what is not
// accounted for.
func TestBudgetWholeLine(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(100, 24)
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 4.2, MeanTPOTms: 4.25, Completed: 12}),
		ev(2, phases.KindNCCLNone, phases.NCCLNone{TP: 1, NProc: 1, Reason: "one GPU"}),
		ev(3, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3000}),
	}})
	v := m.View()
	panetest.Fits(t, v, 100, 24)
	s := ansi.Strip(v)
	for _, want := range []string{"TPOT 4.25 ms mean (median 4.20)", "▓ GEMM 3.00 71%  · unacc. 1.25 29%"} {
		if !strings.Contains(s, want) {
			t.Fatalf("lacks %q:\n%s", want, s)
		}
	}
}

// A GEMM figure summed from the GEMMs a running micro timed so far (no
// per-step total yet) is marked as such; the step total, once written,
// shows plain.
func TestBudgetPartialGEMMSaysSoFar(t *testing.T) {
	d, _ := deps(t)
	m := New(d)
	m.SetSize(78, 19)
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10, Completed: 12}),
		ev(2, phases.KindMicroGEMM, phases.GEMMResult{Name: "qkv", Step: 1, M: 1, N: 4096, K: 4096, Dtype: "bf16", PerStep: 2, Us: 500}),
	}})
	if s := ansi.Strip(m.View()); !strings.Contains(s, "GEMM so far 1.00 10%") {
		t.Fatalf("partial GEMM not said:\n%s", s)
	}
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{ev(3, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3000})}})
	if s := ansi.Strip(m.View()); strings.Contains(s, "so far") || !strings.Contains(s, "GEMM 3.00 30%") {
		t.Fatalf("final GEMM:\n%s", s)
	}
}

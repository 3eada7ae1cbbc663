package ui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
)

// extraPane is a pane added by one table entry.
type extraPane struct {
	got  []phases.Event
	w, h int
}

func (p *extraPane) Init() tea.Cmd { return nil }
func (p *extraPane) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	if em, ok := msg.(common.EventsMsg); ok {
		p.got = append(p.got, em.Events...)
	}
	return p, nil
}
func (p *extraPane) View() string              { return "the extra pane" }
func (p *extraPane) SetSize(w, h int)          { p.w, p.h = w, h }
func (p *extraPane) Typing() bool              { return false }
func (p *extraPane) Busy() bool                { return false }
func (p *extraPane) ShortHelp() []key.Binding  { return nil }
func (p *extraPane) FullHelp() [][]key.Binding { return nil }

// The table drives the tabs, the digit keys, the help and the routing: a
// pane added as one entry gets all four.
func TestAPaneIsOneTableEntry(t *testing.T) {
	m, _, _ := newTestRoot(t)
	extra := &extraPane{}
	table := append(append([]PaneEntry(nil), Panes...), PaneEntry{
		Phase: phases.Micro, Key: "7", Title: "Extra", New: func(*common.Deps) common.Component { return extra }})
	m = NewWith(m.d, nil, table)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	tabs := ansi.Strip(m.tabs())
	for _, e := range table {
		if !strings.Contains(tabs, " "+e.Key+" "+e.Title+" ") {
			t.Errorf("tab bar lacks %s %s: %q", e.Key, e.Title, tabs)
		}
	}
	for i, e := range table {
		press(m, e.Key)
		if m.active != i {
			t.Errorf("key %s: pane %d, want %d", e.Key, m.active, i)
		}
	}
	if got := ansi.Strip(m.render()); !strings.Contains(got, "the extra pane") || !strings.Contains(got, "pane Extra") {
		t.Errorf("pane 7 not shown:\n%s", got)
	}
	if h := m.d.Keys.Pane.Help(); h.Key != "1-7" {
		t.Errorf("digit keys' help %q", h.Key)
	}
	ev := phases.New(m.now, phases.KindMicroGEMM, phases.GEMMResult{Name: "q_proj"})
	m.Update(batchMsg{at: m.now, events: []phases.Event{ev}})
	if len(extra.got) != 1 {
		t.Errorf("the extra pane got %d events of its phase", len(extra.got))
	}
}

// Each event goes to the panes its entry names: the phase's own pane (a
// run's start and finish included, and a marker to the pane it was dropped
// on), the Profile pane the sweep's and the load's journalled events, and
// the Notes pane every journalled event.
func TestTableRouting(t *testing.T) {
	at := func(kind string, d any) phases.Event {
		return phases.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), kind, d)
	}
	for _, c := range []struct {
		ev   phases.Event
		want []string
	}{
		{at(phases.KindMacroTick, phases.MacroTick{}), []string{phases.Macro}},
		{at(phases.KindMacroLevel, phases.LevelResult{}), []string{phases.Macro, phases.Profile, phases.Notes}},
		{at(phases.KindLoadMilestone, phases.Milestone{}), []string{phases.Load, phases.Profile, phases.Notes}},
		{at(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}), []string{phases.NCCL, phases.Notes}},
		{at(phases.KindNotesMarker, phases.Marker{Label: "x", Pane: phases.Micro}), []string{phases.Micro, phases.Notes}},
		{at(phases.KindNotesSaved, phases.NotebookSaved{Path: "nb.md"}), []string{phases.Notes}},
		{at(phases.KindSessionRTT, phases.ConnState{}), nil},
	} {
		var got []string
		for _, e := range Panes {
			if e.wants(c.ev) {
				got = append(got, e.Phase)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s goes to %v, want %v", c.ev.Kind, got, c.want)
		}
	}
}

// A resumed campaign: the journal's earlier events reach the panes whose
// entry asks for a replay (Notes, Profile for the sweep's plateau, Macro,
// Micro and NCCL for their last results), through the same routing as
// live ones.
func TestResumedJournalIsReplayed(t *testing.T) {
	jp := filepath.Join(t.TempDir(), "c.jsonl")
	j, err := report.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	j.Append(phases.New(at, phases.KindNotesNote, phases.Note{Text: "from yesterday", Pane: "Macro"}))
	j.Append(phases.New(at, phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, MedianTPOTms: 15.9}))
	j.Append(phases.New(at, phases.KindMacroPlateau, phases.Plateau{Concurrency: 8}))
	j.Close()
	if j, err = report.OpenJournal(jp); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, _, _ := newTestRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.d.Session = report.NewSession(ctx, j)
	m = NewWith(m.d, nil, Panes)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	view := func(k string) string { press(m, k); return ansi.Strip(m.render()) }
	if v := view("6"); !strings.Contains(v, "from yesterday") {
		t.Errorf("Notes pane without the journal's note:\n%s", v)
	}
	if v := view("5"); !strings.Contains(v, "C=1,8") {
		t.Errorf("Profile pane without the journal's plateau:\n%s", v)
	}
	if v := view("2"); strings.Contains(v, "no sweep yet") || !strings.Contains(v, "plateau at C=8") {
		t.Errorf("Macro pane without the journal's sweep:\n%s", v)
	}
}

// The root takes its own keys before any pane: a key in a pane's help that
// is also a root key would do the root's thing, not what the help says.
// Only a pane's answers to a question it asks (its y/n, while it types)
// reach it first.
func TestPaneKeysAreNotRootKeys(t *testing.T) {
	m, _, _ := newTestRoot(t)
	k := m.d.Keys
	root := map[string]string{}
	for _, b := range []key.Binding{k.Quit, k.ForceQuit, k.Help, k.NextPane, k.PrevPane, k.Pane, k.Write, k.Note, k.Suspend} {
		for _, s := range b.Keys() {
			root[s] = b.Help().Desc
		}
	}
	for i, p := range m.panes {
		for _, col := range p.FullHelp() {
			for _, b := range col {
				if d := b.Help().Desc; d == "yes" || d == "no" {
					continue
				}
				for _, s := range b.Keys() {
					if what, ok := root[s]; ok {
						t.Errorf("pane %s: %q (%s) is the root's key for %q", m.table[i].Title, s, b.Help().Desc, what)
					}
				}
			}
		}
	}
}

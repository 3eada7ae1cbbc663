package ui

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
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
	ev := phases.New(m.now, phases.KindMicroResult, phases.GEMMResult{Name: "q_proj"})
	m.Update(batchMsg{at: m.now, events: []phases.Event{ev}})
	if len(extra.got) != 1 {
		t.Errorf("the extra pane got %d events of its phase", len(extra.got))
	}
}

// Each event goes to the panes its entry names: the phase's own pane (a
// run's start and finish included, and a marker to the pane it was dropped
// on) and the Notes pane when it is journalled.
func TestTableRouting(t *testing.T) {
	at := func(kind string, d any) phases.Event {
		return phases.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), kind, d)
	}
	for _, c := range []struct {
		ev   phases.Event
		want []string
	}{
		{at(phases.KindMacroTick, phases.MacroTick{}), []string{phases.Macro}},
		{at(phases.KindMacroLevel, phases.LevelResult{}), []string{phases.Macro, phases.Notes}},
		{at(phases.KindPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}), []string{phases.NCCL, phases.Notes}},
		{at(phases.KindMarker, phases.Marker{Label: "x", Pane: phases.Macro}), []string{phases.Macro, phases.Notes}},
		{at(phases.KindNotebookSaved, phases.NotebookSaved{Path: "nb.md"}), []string{phases.Notes}},
		{at(phases.KindConnRTT, phases.ConnState{}), nil},
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

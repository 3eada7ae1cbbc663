package macropane

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
)

// With macro.loadgen.hosts, s runs the sweep over the agents (two agent
// processes on the host, in this process): the level's row counts them,
// the line above the table gives their clocks, and the journal holds
// the level's agents.
func TestSweepOverLoadAgents(t *testing.T) {
	h := newHarness(t, []int{2}, 20, 8)
	jp := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := report.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	h.m.d.Session = report.NewSession(h.m.d.Ctx, j)
	h.m.d.Host = inProcessHost{local.New()}
	c := h.m.d.Campaign
	c.Host, c.Macro.Loadgen.Hosts = "gen1", campaign.LoadgenHosts{{Host: "gen1", Procs: 2}}
	h.press("s")
	h.pump(30*time.Second, func() bool { return !h.m.Busy() && len(h.m.levels) == 1 })
	if !strings.Contains(strings.Join(statusTexts(h), "\n"), "over 2 load agents (gen1:2)") {
		t.Errorf("the start does not say it runs over the agents: %v", h.status)
	}
	view := ansi.Strip(h.m.View())
	for _, want := range []string{"agts", "agents at C=2: 2", "gen1#0 +", "gen1#1 "} {
		if !strings.Contains(view, want) {
			t.Errorf("the pane lacks %q:\n%s", want, view)
		}
	}
	rr, err := report.ReadJournalFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	var agents []phases.AgentAudit
	for _, ev := range rr.Events {
		if lv, ok := ev.Data.(phases.LevelResult); ok {
			agents = lv.Agents
		}
	}
	if len(agents) != 2 || agents[0].Agent != "gen1#0" || agents[0].Completed+agents[1].Completed != 20 {
		t.Fatalf("the journal's level has agents %+v: want gen1#0 and gen1#1, 20 requests between them", agents)
	}
}

func statusTexts(h *harness) []string {
	var out []string
	for _, s := range h.status {
		out = append(out, s.Text)
	}
	return out
}

// Levels that lost an agent mid-level read so at 80 columns, their flags
// whole: each row counts the agents left and is marked partial (one also
// bound, one also of few requests), and the line above the table names
// the lost agent and the bottleneck before the clocks.
func TestPartialAgentLevel(t *testing.T) {
	m := newPane(t, 80, 24, false)
	lv := phases.LevelResult{Concurrency: 8, Completed: 30, ClientBound: true, Agents: []phases.AgentAudit{
		{Agent: "gen1#0", Completed: 20, OffsetMs: 12.8, UncertaintyMs: 0.4, ClientBound: true},
		{Agent: "gen2#1", Completed: 10, OffsetMs: -3013, UncertaintyMs: 17, Lost: "connection closed"}}}
	few := phases.LevelResult{Concurrency: 4, Completed: 3, Agents: []phases.AgentAudit{
		{Agent: "gen1#0", Completed: 3}, {Agent: "gen2#1", Lost: "connection refused"}}}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroLevel, few),
		phases.New(clock0, phases.KindMacroLevel, lv)}})
	v := plain(m)
	for _, want := range []string{"agents at C=8: 2 · partial: lost gen2#1 · bottleneck: gen1#0 · clock gen1#0", "+12.80ms±400.0µs",
		"gen2#1 −3.01s±17.00ms · gen2#1: connection closed", " 1/2 bound,part", " 1/2 part,few"} {
		if !strings.Contains(v, want) {
			t.Errorf("the pane lacks %q:\n%s", want, v)
		}
	}
}

// Over load agents, + and - steer the level running on every agent: - at
// C=2 over two agents says the sweep stays at 2 (one stream each) and
// why; + doubles it and the pane's ticks follow; the level notes the change.
func TestLiveSteerOverLoadAgents(t *testing.T) {
	h := newHarness(t, []int{2}, 400, 64)
	h.m.d.Host = inProcessHost{local.New()}
	c := h.m.d.Campaign
	c.Host, c.Macro.Loadgen.Hosts = "gen1", campaign.LoadgenHosts{{Host: "gen1", Procs: 2}}
	h.press("s")
	h.pump(30*time.Second, func() bool { return h.m.cur != nil && h.m.cur.HaveTick })
	h.press("-")
	h.pump(10*time.Second, func() bool { return strings.HasPrefix(h.lastStatus(), "concurrency") })
	if st := h.lastStatus(); st != "concurrency stays at 2; 1 asked, the least its load agents hold (one stream each)" {
		t.Fatalf("- at C=2 over two agents: %q", st)
	}
	h.press("+")
	if c := h.m.sweep.Concurrency(); c != 4 {
		t.Fatalf("+ doubles over the agents: concurrency %d", c)
	}
	h.pump(30*time.Second, func() bool { return h.m.cur != nil && h.m.cur.Tick.Concurrency == 4 && h.m.cur.Tick.InFlight > 2 })
	h.press("s")
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) != 1 || !strings.Contains(strings.Join(h.m.levels[0].Notes, "\n"), "concurrency changed live from 2 to 4 at ") {
		t.Fatalf("levels %d; notes %q", len(h.m.levels), h.m.levels[0].Notes)
	}
}

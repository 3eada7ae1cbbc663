package notespane

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

func TestChecklistStatesAndFit(t *testing.T) {
	d, _ := deps(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	d.RunCampaign = func(ctx context.Context) (*campaignrun.Result, error) {
		started <- struct{}{}
		<-release
		return &campaignrun.Result{Steps: []campaignrun.StepResult{{Name: campaignrun.Profile, State: phases.StepSkipped, Reason: "the restart with the profiler stalled"}}}, nil
	}
	m := New(d)
	m.SetSize(80, 20) // 80×24 less the cockpit's four rows
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "Campaign steps · 0/10 done · 3 load(s) · r runs the remaining steps") || !strings.Contains(v, "· serve [load]") {
		t.Fatalf("empty checklist:\n%s", v)
	}
	panetest.Fits(t, m.View(), 80, 20)

	// A sweep done by hand counts; the run's steps show their state and
	// the one that needs a word shows its reason.
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		ev(2, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 12.4, Completed: 12}),
		ev(3, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro}),
	}})
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'r', Text: "r"})
	if cmd == nil || !m.Busy() {
		t.Fatal("r did not start the run")
	}
	msgs := make(chan tea.Msg, 4)
	batch, _ := cmd().(tea.BatchMsg)
	for _, c := range batch {
		go func() { msgs <- c() }() // the run's command blocks until released
	}
	<-started
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(4, phases.KindRunStarted, phases.RunStarted{Steps: campaignrun.Steps}),
		ev(5, phases.KindRunStep, phases.RunStep{Name: campaignrun.Serve, State: phases.StepStarted}),
		ev(6, phases.KindRunStep, phases.RunStep{Name: campaignrun.Serve, State: phases.StepDone, Reason: "already serving"}),
		ev(7, phases.KindRunStep, phases.RunStep{Name: campaignrun.Restart, State: phases.StepStalled, Reason: "STALLED: no progress for 10 s at 75.8 GiB"}),
		ev(8, phases.KindRunStep, phases.RunStep{Name: campaignrun.Profile, State: phases.StepSkipped, Reason: "the restart with the profiler stalled"}),
		ev(9, phases.KindRunStep, phases.RunStep{Name: campaignrun.LeaveServer, State: phases.StepStarted}),
	}})
	v = ansi.Strip(m.View())
	for _, want := range []string{"2/10 done · 3 load(s) · running", "✓ serve", "✓ sweep (by hand)", "! profiler restart", "– profile", "▶ leave server",
		"profiler restart stalled: STALLED: no progress for 10 s at 75.8 GiB"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
	panetest.Fits(t, m.View(), 80, 20)
	close(release)
	for range batch {
		if msg := <-msgs; msg != nil {
			m.Update(msg)
		}
	}
	if m.Busy() {
		t.Error("still busy after the run ended")
	}
}

func TestChecklistCutShortWhenNotRunning(t *testing.T) {
	st := checklist([]phases.Event{
		ev(1, phases.KindRunStarted, phases.RunStarted{}),
		ev(2, phases.KindRunStep, phases.RunStep{Name: campaignrun.Micro, State: phases.StepStarted}),
	}, phases.RunIdentity{}, nil, false)
	if v := st[campaignrun.Micro]; v.state != phases.StepStopped || !strings.Contains(v.reason, "cut short") {
		t.Errorf("a step started in a journal with no run under way: %+v", v)
	}
}

func TestChecklistSaysTheDoctorsWarnings(t *testing.T) {
	d, _ := deps(t)
	d.RunCampaign = func(ctx context.Context) (*campaignrun.Result, error) { return &campaignrun.Result{}, nil }
	m := New(d)
	m.SetSize(80, 20)
	check := func(i int, name, status string) phases.Event {
		return ev(i, phases.KindDoctorCheck, phases.DoctorCheck{Name: name, Status: status, Found: "x"})
	}
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindRunStarted, phases.RunStarted{Steps: campaignrun.Steps}),
		ev(2, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Doctor}),
		check(3, "host", phases.CheckOK), check(4, "path", phases.CheckWarn), check(5, "engine", phases.CheckWarn),
		ev(6, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Doctor}),
		ev(7, phases.KindRunStep, phases.RunStep{Name: campaignrun.Doctor, State: phases.StepDone, Reason: "10 checks in 0.1 s, 2 warning(s)"}),
	}})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "✓ doctor") || !strings.Contains(v, "doctor: path warn, engine warn (profdeck doctor gives each") {
		t.Fatalf("checklist:\n%s", v)
	}
	panetest.Fits(t, m.View(), 80, 20)
	// A later doctor run with every check ok leaves no word.
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(8, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Doctor}), check(9, "path", phases.CheckOK),
	}})
	if v := ansi.Strip(m.View()); strings.Contains(v, "doctor: ") {
		t.Errorf("an all-ok doctor run still warns:\n%s", v)
	}
}

// A step done with other parameters than the campaign's now is marked
// changed in the checklist, with what changed.
func TestChecklistShowsChangedSteps(t *testing.T) {
	d, _ := deps(t)
	d.RunCampaign = func(ctx context.Context) (*campaignrun.Result, error) { return &campaignrun.Result{}, nil }
	d.Campaign = campaign.Defaults()
	d.Campaign.Macro.Concurrency = []int{1, 4}
	d.RunIdentity = d.Campaign.RunIdentity()
	done := d.Campaign.StepParams()[campaignrun.Macro]
	done = maps.Clone(done)
	done["macro.concurrency"] = "1,8"
	m := New(d)
	m.SetSize(80, 20)
	m.Update(common.EventsMsg{At: t0, Events: []phases.Event{
		ev(1, phases.KindRunStarted, phases.RunStarted{Identity: d.RunIdentity, Steps: campaignrun.Steps}),
		ev(2, phases.KindRunStep, phases.RunStep{Name: campaignrun.Macro, State: phases.StepStarted}),
		ev(3, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 12}),
		ev(4, phases.KindRunStep, phases.RunStep{Name: campaignrun.Macro, State: phases.StepDone, Params: done}),
	}})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "~ sweep (changed)") || !strings.Contains(v, "sweep changed since done (macro.concurrency: 1,8 → 1,4)") {
		t.Fatalf("checklist:\n%s", v)
	}
	panetest.Fits(t, m.View(), 80, 20)
}

// With every step done the heading says so, not that r runs the
// remaining steps (there are none).
func TestChecklistAllDoneHasNothingRemaining(t *testing.T) {
	d, _ := deps(t)
	d.RunCampaign = func(context.Context) (*campaignrun.Result, error) { return &campaignrun.Result{}, nil }
	m := New(d)
	m.SetSize(80, 20)
	var evs []phases.Event
	for i, s := range campaignrun.Steps {
		evs = append(evs, ev(i+1, phases.KindRunStep, phases.RunStep{Name: s, State: phases.StepDone}))
	}
	m.Update(common.EventsMsg{At: evs[0].Time, Events: evs, Replayed: true})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "10/10 done · ") || !strings.Contains(v, " · every step done") || strings.Contains(v, "remaining steps") {
		t.Fatalf("all done:\n%s", v)
	}
}

// A part that rounds to zero reads 0, never -0.
func TestNoNegativeZero(t *testing.T) {
	for _, c := range []struct{ x, half, want float64 }{{-0.001, 0.005, 0}, {-0.3, 0.5, 0}, {-0.38, 0.005, -0.38}, {0.004, 0.005, 0}, {-0.8, 0.5, -0.8}} {
		if got := unsigned0(c.x, c.half); got != c.want || fmt.Sprintf("%.2f", got) == "-0.00" {
			t.Errorf("unsigned0(%v, %v) = %v, want %v", c.x, c.half, got, c.want)
		}
	}
}

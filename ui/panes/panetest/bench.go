package panetest

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// Deps starts a simulated deployment (closed when the test ends) and builds
// a pane's deps on it, with a campaign whose model is Kimi-K2.5 by its
// served name; set adjusts the campaign.
func Deps(t *testing.T, opt sim.Options, set func(*campaign.Campaign)) (*common.Deps, *sim.Deployment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := campaign.Defaults()
	c.Host = "sim"
	c.Model.Name = "moonshotai/Kimi-K2.5" // no preset: guessed from the name
	set(c)
	return &common.Deps{Ctx: ctx, Host: d, Campaign: c, Session: report.NewSession(ctx, nil),
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(), Now: time.Now}, d
}

// Pane is a pane under test.
type Pane struct {
	C       common.Component
	D       *common.Deps
	Phase   string          // the phase whose events the pane gets
	Runner  *gpupane.Runner // a GPU pane's run (for its flows)
	Results func() int      // how many results the pane holds
}

// Press sends a key to the pane, runs the command it returns to its end,
// and feeds the session's events of the phase back as the root does.
func (p Pane) Press(k string) {
	_, cmd := p.C.Update(Key(k))
	p.run(cmd)
	p.Drain()
}

// run runs cmd and every command that follows from it, handing each message
// to the pane. Before a run's end it hands the pane the run's events, as
// the root would have by then.
func (p Pane) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, sub := range b {
			p.run(sub)
		}
		return
	}
	if _, ok := msg.(common.RunEndedMsg); ok {
		p.Drain()
	}
	if msg != nil {
		_, next := p.C.Update(msg)
		p.run(next)
	}
}

// Drain hands the pane, in one batch, the session's events of its phase
// that come within 300 ms, or until the phase's finish.
func (p Pane) Drain() {
	var evs []phases.Event
	timeout := time.After(300 * time.Millisecond)
	for {
		select {
		case ev := <-p.D.Session.Updates():
			if common.PhaseOf(ev) != p.Phase {
				continue
			}
			evs = append(evs, ev)
			if _, fin := ev.Data.(phases.PhaseFinished); !fin {
				continue
			}
		case <-timeout:
		}
		_, cmd := p.C.Update(common.EventsMsg{At: time.Now(), Events: evs})
		p.run(cmd)
		return
	}
}

// CancelKeepsResults presses s, presses c 600 ms into the run, hands the
// pane the run's end, and checks that the run ended as cancelled with the
// results so far kept.
func (p Pane) CancelKeepsResults(t *testing.T) {
	t.Helper()
	_, cmd := p.C.Update(Key("s"))
	msgs := make(chan tea.Msg, 4)
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, sub := range b {
				msgs <- sub()
			}
			return
		}
		msgs <- msg
	}()
	time.Sleep(600 * time.Millisecond)
	if !p.Runner.Active() {
		t.Fatal("not busy while running")
	}
	p.C.Update(Key("c"))
	for ended := false; !ended; {
		select {
		case msg := <-msgs:
			if _, ok := msg.(common.RunEndedMsg); ok {
				p.Drain()
				p.run(func() tea.Msg { return msg })
				ended = true
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the run did not end after c")
		}
	}
	if r := p.Runner; r.Active() || r.State != common.RunCancelled || p.Results() == 0 {
		t.Errorf("after cancel: busy %v state %v results %d", r.Active(), r.State, p.Results())
	}
}

// BusyThenStopServer checks the pane on d, whose server is loading onto the
// GPUs: once it is ready, s shows the busy banner with its keys (within
// 78×19), and x stops the server the way the Load phase does, then runs.
func (p Pane) BusyThenStopServer(t *testing.T, d *sim.Deployment) {
	t.Helper()
	// The server is profdeck's own launch: x stops nothing else.
	srv := p.D.Server
	if srv == nil {
		srv = p.D.Campaign.NewServer(d)
	}
	if srv.Settings.Launch == "" {
		srv.Settings.Launch = campaign.DemoLaunch
	}
	if _, err := srv.Start(context.Background(), nil, nil); err != nil {
		t.Fatalf("launch: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !d.Ready() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.Press("s")
	r := p.Runner
	if r.Busy == nil {
		t.Fatalf("no busy banner:\n%s", ansi.Strip(p.C.View()))
	}
	v := ansi.Strip(p.C.View())
	if !strings.Contains(v, "GPUs are busy") || !strings.Contains(v, "x: stop the server") {
		t.Errorf("busy view:\n%s", v)
	}
	FitsBoxes(t, p.C)
	p.Press("x")
	if r.State != common.RunFinished || p.Results() == 0 {
		t.Fatalf("after x: state %v, %d results, error %v %s", r.State, p.Results(), r.Err, r.StopErr)
	}
	if d.ServerRunning() {
		t.Error("the server still runs")
	}
}

// Package benchtest holds what the Micro and NCCL pane tests share: a pane's
// deps on the simulated deployment, key presses run to their end with the
// session's events fed back as the root does, a cancelled run, and the check
// that a view fits its size. Only tests import it.
package benchtest

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/report/campaign"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/gpubench"
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

// WaitReady waits up to 10 s for the simulated server to be ready.
func WaitReady(d *sim.Deployment) {
	deadline := time.Now().Add(10 * time.Second)
	for !d.Ready() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// Key is the press of a one-letter key.
func Key(k string) tea.KeyPressMsg { return tea.KeyPressMsg{Code: rune(k[0]), Text: k} }

// Press sends a key to c, runs the command it returns to its end, and
// feeds the session's events of phase back as the root does.
func Press(c common.Component, d *common.Deps, phase, k string) {
	_, cmd := c.Update(Key(k))
	RunCmd(c, cmd)
	Drain(c, d, phase)
}

// RunCmd runs cmd and every command that follows from it, handing each
// message to c.
func RunCmd(c common.Component, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, sub := range b {
			RunCmd(c, sub)
		}
		return
	}
	if msg != nil {
		_, next := c.Update(msg)
		RunCmd(c, next)
	}
}

// Drain hands c, in one batch, the session's events of phase that come
// within 300 ms.
func Drain(c common.Component, d *common.Deps, phase string) {
	var evs []phases.Event
	timeout := time.After(300 * time.Millisecond)
	for {
		select {
		case ev := <-d.Session.Updates():
			if ev.Phase == phase {
				evs = append(evs, ev)
			}
		case <-timeout:
			c.Update(common.EventsMsg{At: time.Now(), Events: evs})
			return
		}
	}
}

// StartAndCancel presses s, presses c 600 ms into the run (failing if c is
// not busy then), hands c the run's end and drains the events.
func StartAndCancel(t *testing.T, c common.Component, d *common.Deps, phase string, busy func() bool) {
	t.Helper()
	_, cmd := c.Update(Key("s"))
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
	if !busy() {
		t.Fatal("not busy while running")
	}
	c.Update(Key("c"))
	for {
		select {
		case msg := <-msgs:
			if dm, ok := msg.(gpubench.DoneMsg); ok && dm.Run != 0 {
				c.Update(dm)
				Drain(c, d, phase)
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the run did not end after c")
		}
	}
}

// CheckFits fails t when view is more than h lines or any line more than w
// cells wide.
func CheckFits(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > h {
		t.Errorf("%d lines, more than %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d wide: %q", i, n, ansi.Strip(l))
		}
	}
}

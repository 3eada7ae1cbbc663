package ncclppane

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
)

func newPane(t *testing.T, opt sim.Options) (*Model, *sim.Deployment) {
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
	c.NCCL.Batch = []int{1, 8, 64, 128}
	c.Micro.Python = "docker exec -i vllm python3"
	deps := &common.Deps{Ctx: ctx, Host: d, Campaign: c, Session: report.NewSession(ctx, nil),
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(), Now: time.Now}
	m := New(deps)
	m.SetSize(78, 19)
	return m, d
}

func keyMsg(k string) tea.KeyPressMsg { return tea.KeyPressMsg{Code: rune(k[0]), Text: k} }

// press sends a key, runs the command it returns to its end, and feeds the
// session's events back as the root does.
func press(t *testing.T, m *Model, k string) {
	t.Helper()
	_, cmd := m.Update(keyMsg(k))
	runCmd(m, cmd)
	drain(m)
}

func runCmd(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			runCmd(m, c)
		}
		return
	}
	if msg != nil {
		_, next := m.Update(msg)
		runCmd(m, next)
	}
}

func drain(m *Model) {
	var evs []phases.Event
	timeout := time.After(300 * time.Millisecond)
	for {
		select {
		case ev := <-m.d.Session.Updates():
			if ev.Phase == phases.NCCL {
				evs = append(evs, ev)
			}
		case <-timeout:
			m.Update(common.EventsMsg{At: time.Now(), Events: evs})
			return
		}
	}
}

func checkFits(t *testing.T, view string, w, h int) {
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

func TestRunFillsTheTables(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	if !strings.Contains(ansi.Strip(m.View()), "s: time the decode step") {
		t.Errorf("idle view:\n%s", m.View())
	}
	press(t, m, "s")
	v := ansi.Strip(m.View())
	for _, want := range []string{"SIMULATED", "kimi-k2.5 TP8 · 8 ranks", "123 × [M, 7168]", "1.75 MiB", "graph ms"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	checkFits(t, m.View(), 78, 19)
	// The All-to-All table is below: scroll to it.
	for i := 0; i < 30; i++ {
		m.Update(keyMsg("j"))
	}
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "◀ cliff") || !strings.Contains(v, "latency cliff at T=16") {
		t.Errorf("scrolled view:\n%s", v)
	}
	checkFits(t, m.View(), 78, 19)
	m.SetSize(100, 40)
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "All-reduce burst") || !strings.Contains(v, "◀ cliff") {
		t.Errorf("tall view shows both tables:\n%s", v)
	}
	checkFits(t, m.View(), 100, 40)
}

func TestBusyGPUsOfferToStopTheServer(t *testing.T) {
	m, d := newPane(t, sim.Options{AutoStart: true, LoadTime: 500 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for !d.Ready() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	press(t, m, "s")
	if m.busy == nil {
		t.Fatalf("no busy banner:\n%s", ansi.Strip(m.View()))
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "GPUs are busy") || !strings.Contains(v, "x: stop the server") {
		t.Errorf("busy view:\n%s", v)
	}
	checkFits(t, m.View(), 78, 19)
	// x stops the server the way the Load phase does, then runs.
	press(t, m, "x")
	if m.busy != nil || len(m.res.Bursts) == 0 || m.failed {
		t.Fatalf("after x: busy %v, %d GEMMs, msg %q", m.busy, len(m.res.Bursts), m.msg)
	}
	if d.ServerRunning() {
		t.Error("the server still runs")
	}
}

func TestCancelKeepsResults(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	_, cmd := m.Update(keyMsg("s"))
	msgs := make(chan tea.Msg, 4)
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				msgs <- c()
			}
			return
		}
		msgs <- msg
	}()
	time.Sleep(600 * time.Millisecond)
	if !m.Busy() {
		t.Fatal("not busy while running")
	}
	m.Update(keyMsg("c"))
	var done doneMsg
	for done.run == 0 {
		select {
		case msg := <-msgs:
			if dm, ok := msg.(doneMsg); ok {
				done = dm
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the run did not end after c")
		}
	}
	m.Update(done)
	drain(m)
	if m.Busy() || !strings.Contains(m.msg, "cancelled") || len(m.res.Bursts) == 0 {
		t.Errorf("after cancel: busy %v msg %q GEMMs %d", m.Busy(), m.msg, len(m.res.Bursts))
	}
}

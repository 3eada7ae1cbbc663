package loadpane

import (
	"context"
	"fmt"
	"regexp"
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
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// setup runs the pane against a simulated deployment with a real session,
// and returns a function that feeds the session's events to the pane for d.
func setup(t *testing.T, opt sim.Options, stallAfter time.Duration) (*Model, func(d time.Duration)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dep, err := sim.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dep.Close() })
	c := campaign.Defaults()
	c.Host = "sim"
	if stallAfter > 0 { // else the campaign's
		c.Load.StallAfter.Duration = stallAfter
	}
	c.Load.PollInterval.Duration = 200 * time.Millisecond
	c.Server.Launch = "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8"
	sess := report.NewSession(ctx, nil)
	d := &common.Deps{Ctx: ctx, Host: dep, Campaign: c, Session: sess, Styles: common.NewStyles(common.DefaultTheme()),
		Keys: common.DefaultKeyMap(), Now: time.Now}
	m := New(d)
	m.SetSize(78, 19)
	cmd := m.Init()
	if cmd == nil {
		t.Fatal("Init started no watcher")
	}
	go cmd()
	pump := func(dur time.Duration) {
		end := time.After(dur)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var batch []phases.Event
		for {
			select {
			case ev := <-sess.Updates():
				if ev.Phase == phases.Load {
					batch = append(batch, ev)
				}
			case at := <-tick.C:
				m.Update(common.EventsMsg{At: at, Events: batch})
				batch = nil
			case <-end:
				m.Update(common.EventsMsg{At: time.Now(), Events: batch})
				return
			}
		}
	}
	return m, pump
}

// The demo's first seconds: eight GPU bars fill, SIMULATED shows, and the
// pane fits 78×19.
func TestPaneFillsEightBars(t *testing.T) {
	m, pump := setup(t, sim.Options{LoadTime: 20 * time.Second, AutoStart: true}, 0)
	pump(3 * time.Second)
	v := m.View()
	for i := 0; i < 8; i++ {
		if !strings.Contains(v, "GPU"+string(rune('0'+i))) {
			t.Errorf("no GPU%d bar:\n%s", i, v)
		}
	}
	for _, want := range []string{"SIMULATED", "GiB", "█", "weights"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	// Each row has the GPU's utilisation and power beside its memory.
	if n := len(regexp.MustCompile(`GiB +\d+%[^\n]* SM +\d+% +\d+ W`).FindAllString(ansi.Strip(v), -1)); n != 8 {
		t.Errorf("%d of 8 rows show utilisation and power:\n%s", n, v)
	}
	panetest.Fits(t, v, 78, 19)
	m.SetSize(140, 40)
	panetest.Fits(t, m.View(), 140, 40)
	m.fullLog = true
	m.SetSize(78, 19)
	panetest.Fits(t, m.View(), 78, 19)
}

// A load that stalls at 75.8 GiB shows the red banner with the figure.
func TestPaneStallBanner(t *testing.T) {
	m, pump := setup(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, StallAtGiB: 75.8, WeightsGiB: 90}, 2*time.Second)
	pump(6 * time.Second)
	v := m.View()
	if !strings.Contains(v, "STALLED at 75.8 GiB on GPUs 0-7") {
		t.Fatalf("no stall banner:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	// The stall is diagnosed on its own; d asks again at any time.
	for i := 0; i < 20 && m.diag == nil; i++ {
		pump(500 * time.Millisecond)
	}
	v = m.View()
	if m.diag == nil || m.diag.Trigger != "stall" || !strings.Contains(v, "why: weights I/O stopped (0 B/s for") || !strings.Contains(v, "8 ranks in safetensors/torch.py") {
		t.Fatalf("no diagnosis under the banner:\n%s", v)
	}
	panetest.Fits(t, v, 78, 19)
	m.SetSize(80, 24)
	panetest.Fits(t, m.View(), 80, 24)
	first := m.diag
	if cmd := press(m, "d"); cmd == nil || !m.diagnosing {
		t.Fatal("d did not start a diagnosis")
	}
	for i := 0; i < 20 && m.diag == first; i++ {
		pump(500 * time.Millisecond)
	}
	if m.diag == first || m.diag.Trigger != "request" {
		t.Errorf("d brought no new diagnosis: %+v", m.diag)
	}
}

func press(m *Model, k string) tea.Cmd {
	_, cmd := m.Update(tea.KeyPressMsg{Code: rune(k[0]), Text: k})
	return cmd
}

// runCmd runs a pane's command and gives the pane what it returns.
func runCmd(t *testing.T, m *Model, cmd tea.Cmd) tea.Msg {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		m.Update(msg)
		return msg
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not finish")
	}
	return nil
}

// A serving server profdeck did not launch is not stopped: x says so and
// names what holds the GPUs (pid, user, command), and asks nothing.
func TestPaneStopLeavesServerNotLaunched(t *testing.T) {
	m, pump := setup(t, sim.Options{LoadTime: 1 * time.Second, AutoStart: true}, 0)
	pump(3 * time.Second)
	if !m.serving() {
		t.Fatalf("not serving after the load:\n%s", m.View())
	}
	msg, _ := runCmd(t, m, press(m, "x")).(stopCheckMsg)
	if m.confirm != nil || m.op != "" || msg.ours {
		t.Fatalf("x on a server profdeck did not launch: confirm %+v, op %q", m.confirm, m.op)
	}
	if !strings.Contains(msg.text, "not stopped") || !strings.Contains(msg.text, "holding the GPUs: pid ") {
		t.Errorf("x says %q, want the server left and what holds the GPUs named", msg.text)
	}
	pump(time.Second)
	if !m.serving() {
		t.Fatal("the server profdeck did not launch was stopped")
	}
}

// Stopping a serving server profdeck launched asks first, naming its
// process group; "n" cancels, "y" stops and the GPUs are freed; "r" asks
// and says it costs a reload.
func TestPaneStopAsksWhenServing(t *testing.T) {
	m, pump := setup(t, sim.Options{LoadTime: 1 * time.Second}, 0)
	pid, err := m.server.Start(m.opCtx(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pump(3 * time.Second)
	if !m.serving() {
		t.Fatalf("not serving after the load:\n%s", m.View())
	}
	runCmd(t, m, press(m, "x"))
	if m.confirm == nil || !m.Typing() {
		t.Fatal("x on a serving server did not ask")
	}
	if !strings.Contains(m.View(), fmt.Sprintf("(process group %d)", pid)) || !strings.Contains(m.View(), "(y/n)") {
		t.Errorf("question not shown with the pid:\n%s", m.View())
	}
	panetest.Fits(t, m.View(), 78, 19)
	press(m, "n")
	if m.confirm != nil || m.op != "" {
		t.Fatal("n did not cancel")
	}
	press(m, "r")
	if m.confirm == nil || !strings.Contains(m.confirm.prompt, "costs a full reload") {
		t.Fatalf("restart question: %+v", m.confirm)
	}
	if v := m.View(); !strings.Contains(v, "(y/n)") || !strings.Contains(v, "Restart with the torch profiler") {
		t.Errorf("restart question not shown with its keys:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	press(m, "n")
	runCmd(t, m, press(m, "x"))
	cmd := press(m, "y")
	if cmd == nil || m.op != "stopping" || !m.Busy() {
		t.Fatal("y did not start stopping")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		m.Update(msg)
		if od, ok := msg.(opDoneMsg); !ok || od.err != nil {
			t.Fatalf("stop: %+v", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop did not finish")
	}
	pump(time.Second)
	if m.Busy() || m.serving() {
		t.Errorf("after stop: busy %v serving %v", m.Busy(), m.serving())
	}
	if v := m.View(); !strings.Contains(v, "stopped") {
		t.Errorf("view after stop:\n%s", v)
	}
}

// Another user's job holds one of the GPUs beside the server profdeck
// launched: x asks about the launch alone and names the other holder (pid,
// user, command), said to stay; y stops the launch and leaves the job.
func TestPaneStopNamesOtherHolders(t *testing.T) {
	job := sim.OtherProc{PID: 31337, GPU: 3, MiB: 20480, User: "pdother", Command: "python train.py --steps 9000"}
	m, pump := setup(t, sim.Options{LoadTime: 1 * time.Second, Others: []sim.OtherProc{job}}, 0)
	pid, err := m.server.Start(m.opCtx(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pump(3 * time.Second)
	if !m.serving() {
		t.Fatalf("not serving after the load:\n%s", m.View())
	}
	runCmd(t, m, press(m, "x"))
	if m.confirm == nil {
		t.Fatal("x on a serving server did not ask")
	}
	q := m.confirm.prompt
	if !strings.Contains(q, fmt.Sprintf("(process group %d)", pid)) || !strings.Contains(q, "Not stopped") ||
		!strings.Contains(q, "pid 31337 (pdother) python train.py --steps 9000") || strings.Contains(q, "free the GPUs") {
		t.Errorf("question %q: want the launch asked about and the other user's job named as staying", q)
	}
	if v := m.View(); !strings.Contains(v, "pid 31337 (pdother)") || !strings.Contains(v, "(y/n)") {
		t.Errorf("the other holder is not on the screen:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	cmd := press(m, "y")
	if msg := cmd(); msg.(opDoneMsg).err != nil {
		t.Fatalf("stop: %+v", msg)
	}
	hs, _ := m.server.Holders(m.opCtx())
	if len(hs) != 1 || hs[0].PID != job.PID {
		t.Errorf("after the stop the GPUs are held by %+v, want the other user's job alone", hs)
	}
}

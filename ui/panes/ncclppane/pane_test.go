package ncclppane

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report/campaign"
	"github.com/profdeck/profdeck/ui/panes/gpubench/benchtest"
)

func newPane(t *testing.T, opt sim.Options) (*Model, *sim.Deployment) {
	t.Helper()
	deps, d := benchtest.Deps(t, opt, func(c *campaign.Campaign) {
		c.NCCL.Batch = []int{1, 8, 64, 128}
	})
	m := New(deps)
	m.SetSize(78, 19)
	return m, d
}

func press(m *Model, k string) { benchtest.Press(m, m.d, phases.NCCL, k) }

func keyMsg(k string) tea.KeyPressMsg { return benchtest.Key(k) }

var checkFits = benchtest.CheckFits

func TestRunFillsTheTables(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	if !strings.Contains(ansi.Strip(m.View()), "s: time the decode step") {
		t.Errorf("idle view:\n%s", m.View())
	}
	press(m, "s")
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
	benchtest.WaitReady(d)
	press(m, "s")
	if m.r.Busy == nil {
		t.Fatalf("no busy banner:\n%s", ansi.Strip(m.View()))
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "GPUs are busy") || !strings.Contains(v, "x: stop the server") {
		t.Errorf("busy view:\n%s", v)
	}
	checkFits(t, m.View(), 78, 19)
	// x stops the server the way the Load phase does, then runs.
	press(m, "x")
	if m.r.Busy != nil || len(m.res.Bursts) == 0 || m.r.Failed {
		t.Fatalf("after x: busy %v, %d GEMMs, msg %q", m.r.Busy, len(m.res.Bursts), m.r.Msg)
	}
	if d.ServerRunning() {
		t.Error("the server still runs")
	}
}

func TestCancelKeepsResults(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	benchtest.StartAndCancel(t, m, m.d, phases.NCCL, m.Busy)
	if m.Busy() || !strings.Contains(m.r.Msg, "cancelled") || len(m.res.Bursts) == 0 {
		t.Errorf("after cancel: busy %v msg %q GEMMs %d", m.Busy(), m.r.Msg, len(m.res.Bursts))
	}
}

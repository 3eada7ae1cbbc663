package micropane

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

func newPane(t *testing.T, opt sim.Options) (*Model, *sim.Deployment) {
	t.Helper()
	deps, d := panetest.Deps(t, opt, func(c *campaign.Campaign) {
		c.Micro.Batch = []int{1, 128}
		c.Micro.Python = "docker exec -i vllm python3"
	})
	m := New(deps)
	m.SetSize(78, 19)
	return m, d
}

func bench(m *Model) panetest.Pane {
	return panetest.Pane{C: m, D: m.d, Phase: phases.Micro, Runner: &m.r, Results: func() int { return len(m.res.GEMMs) }}
}

func TestRunFillsTheTable(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	panetest.Shows(t, m.View(), "s: time every GEMM")
	bench(m).Press("s")
	panetest.Shows(t, m.View(), "SIMULATED", "kimi-k2.5 TP8", "experts.w13", "M=1", "M=128", "graph", "do_bench", "done:")
	v := ansi.Strip(m.View())
	panetest.Fits(t, m.View(), 78, 19)
	// At 78×19 not every GEMM fits: the header says which rows show. The
	// simulated script times every GEMM in its served format: no row is
	// marked, and no legend of * is drawn.
	if !strings.Contains(v, "GEMM 1–") {
		t.Errorf("view does not say which rows show:\n%s", v)
	}
	if strings.Contains(v, "*") || strings.Contains(v, "timed BF16") {
		t.Errorf("a GEMM timed as served is marked as timed in BF16:\n%s", v)
	}
	// A result whose experts were timed in BF16 marks them and says what *
	// means, whole, on screen.
	markBF16(m, "experts.")
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "experts.w13*") {
		t.Errorf("a GEMM timed in BF16 is not marked:\n%s", v)
	}
	if flat := strings.Join(strings.Fields(v), " "); !strings.Contains(flat, "* timed BF16, served "+m.served) || m.served == "" {
		t.Errorf("the legend of * is cut or missing (served %q):\n%s", m.served, v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	// Largest contributor first: the routed experts at M=1.
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "GEMM") {
			if f := strings.Fields(lines[i+1]); len(f) == 0 || f[0] != m.shown[0].Name {
				t.Errorf("first row %q, want the largest, %s", lines[i+1], m.shown[0].Name)
			}
			break
		}
	}
	// o cycles the order; l shows the next batch size.
	bench(m).Press("o")
	if !strings.Contains(ansi.Strip(m.View()), "sorted by call time") {
		t.Error("o did not change the order")
	}
	bench(m).Press("l")
	if m.res.Ms()[m.mi] != 128 {
		t.Errorf("l: M index %d", m.mi)
	}
	m.SetSize(120, 40)
	panetest.Fits(t, m.View(), 120, 40)
	if !strings.Contains(m.View(), "GB/s") {
		t.Error("wide view lacks GB/s")
	}
	// j scrolls; never past the last row.
	m.SetSize(78, 12)
	for i := 0; i < 40; i++ {
		m.Update(panetest.Key("j"))
	}
	panetest.Fits(t, m.View(), 78, 12)
	if m.rows.Offset == 0 {
		t.Error("j did not scroll")
	}
}

func TestBusyGPUsOfferToStopTheServer(t *testing.T) {
	m, d := newPane(t, sim.Options{LoadTime: 500 * time.Millisecond})
	bench(m).BusyThenStopServer(t, d)
}

func TestCancelKeepsResults(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	bench(m).CancelKeepsResults(t)
}

// stopRecorder is a load.Follower counting the stops it is told of.
type stopRecorder struct{ stopped atomic.Int32 }

func (s *stopRecorder) MarkStarted() {}
func (s *stopRecorder) MarkStopped() { s.stopped.Add(1) }

// x stops the cockpit's shared server, the one the Load pane's watcher
// follows: the watcher is told the stop was asked for, so it does not read
// it as a load that died (a new load, a stall, a "server process gone"
// diagnosis, as a server of its own made it do).
func TestStopServerStopsTheSharedServer(t *testing.T) {
	m, d := newPane(t, sim.Options{LoadTime: 500 * time.Millisecond})
	m.d.Server = m.d.Campaign.NewServer(d)
	var w stopRecorder
	m.d.Server.Follow(&w)
	bench(m).BusyThenStopServer(t, d)
	if w.stopped.Load() == 0 {
		t.Error("the Load pane's watcher was not told of the stop")
	}
}

// At 80×24 (the pane's 78×19) the idle hint is whole, wrapped, not cut.
func TestIdleHintWholeAt80(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	v := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	if !strings.Contains(v, "(the model, TP and batch sizes come from the campaign)") || strings.Contains(v, "…") {
		t.Fatalf("idle hint cut:\n%s", ansi.Strip(m.View()))
	}
}

// With the demo's five batch sizes at 80×24 (the pane's 78×19) the legend
// of * takes a line of its own rather than being cut.
func TestLegendWholeWithManyBatches(t *testing.T) {
	deps, _ := panetest.Deps(t, sim.Options{}, func(c *campaign.Campaign) { c.Micro.Batch = []int{1, 8, 64, 128, 256} })
	m := New(deps)
	m.SetSize(78, 19)
	bench(m).Press("s")
	panetest.Shows(t, m.View(), "done:")
	markBF16(m, "experts.")
	v := ansi.Strip(m.View())
	if m.served == "" {
		t.Fatal("no served dtype: the legend of * is not drawn")
	}
	if flat := strings.Join(strings.Fields(v), " "); !strings.Contains(flat, "* timed BF16, served "+m.served) {
		t.Errorf("the legend of * is cut:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
}

// markBF16 makes the pane's GEMMs whose names start with prefix timed in
// BF16 while served in their format (as micro.py does where no kernel of
// the served format is at hand), and has the pane draw them again.
func markBF16(m *Model, prefix string) {
	for i, g := range m.res.GEMMs {
		if strings.HasPrefix(g.Name, prefix) && g.Served != "" {
			m.res.GEMMs[i].AsServed = false
		}
	}
	m.clamp()
	m.dirty = true
}

package ncclpane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

func newPane(t *testing.T, opt sim.Options) (*Model, *sim.Deployment) {
	t.Helper()
	return newPaneEP(t, opt, true)
}

// newPaneEP is the pane on a deployment with expert parallelism or
// without (its All-to-All then not shown).
func newPaneEP(t *testing.T, opt sim.Options, ep bool) (*Model, *sim.Deployment) {
	t.Helper()
	deps, d := panetest.Deps(t, opt, func(c *campaign.Campaign) {
		c.NCCL.Batch = []int{1, 8, 64, 128}
		c.Model.EP = ep
	})
	m := New(deps)
	m.SetSize(78, 19)
	return m, d
}

func bench(m *Model) panetest.Pane {
	return panetest.Pane{C: m, D: m.d, Phase: phases.NCCL, Runner: &m.r, Results: func() int { return len(m.res.Bursts) }}
}

func TestRunFillsTheTables(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	panetest.Shows(t, m.View(), "s: time the decode step")
	bench(m).Press("s")
	panetest.Shows(t, m.View(), "SIMULATED", "kimi-k2.5 TP8 · 8 ranks", "123 × [M, 7168]", "1.75 MiB", "graph ms")
	v := ansi.Strip(m.View())
	panetest.Fits(t, m.View(), 78, 19)
	if !strings.Contains(v, "↓") {
		t.Errorf("the view does not say that the tables go on below:\n%s", v)
	}
	// The All-to-All table is below: scroll to it.
	for i := 0; i < 30; i++ {
		m.Update(panetest.Key("j"))
	}
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "◀ cliff") || !strings.Contains(v, "latency cliff at T=16") || strings.Contains(v, "↓") {
		t.Errorf("scrolled view:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	m.SetSize(100, 40)
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "All-reduce burst") || !strings.Contains(v, "◀ cliff") {
		t.Errorf("tall view shows both tables:\n%s", v)
	}
	panetest.Fits(t, m.View(), 100, 40)
}

// Without expert parallelism the pane says, as the notebook does, that the
// All-to-All it timed is not shown (the decode step sends none): no cliff.
func TestNoEPShowsNoAllToAll(t *testing.T) {
	m, _ := newPaneEP(t, sim.Options{}, false)
	bench(m).Press("s")
	m.SetSize(100, 40)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "All-reduce burst") || strings.Contains(v, "cliff") ||
		!strings.Contains(strings.Join(strings.Fields(v), " "), nccl.NoEPText(len(m.res.AllToAll))) {
		t.Errorf("view without EP:\n%s", v)
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

// One GPU: the run says there are no collectives, in words, and fits.
func TestOneGPUSaysNoCollectives(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{phases.New(time.Now(), phases.KindNCCLNone, phases.NCCLNone{TP: 1, NProc: 1,
		Reason: "one process on one GPU (TP 1): a decode step there has no all-reduce or all-to-all, so there is nothing for NCCL to time and communication is 0 ms per step"})}})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "No collectives at this deployment") || !strings.Contains(v, "one process on one GPU (TP 1)") ||
		strings.Contains(v, "s: time the decode step") {
		t.Errorf("view:\n%s", v)
	}
	panetest.Fits(t, m.View(), 78, 19)
	m.SetSize(80, 24)
	panetest.Fits(t, m.View(), 80, 24)
}

// On a deployment of several nodes, s runs torchrun on every node (as the
// campaign run and `profdeck nccl` do), not on the head alone: the
// All-to-All spans both nodes' ranks, and the pane says what leaves the
// node (as the notebook and `profdeck nccl` do).
func TestRunSpansEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ds, err := sim.StartNodes(ctx, sim.Options{TP: 16}, 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ds[0].Close()
	defer ds[1].Close()
	c := campaign.Defaults()
	c.Host, c.Model.Name, c.Model.TP, c.Sim.Nodes, c.Model.EP = "sim", "moonshotai/Kimi-K2.5", 16, 2, true
	c.NCCL.Batch = []int{1, 8}
	m := New(&common.Deps{Ctx: ctx, Host: ds[0], Nodes: []remote.Host{ds[0], ds[1]}, Campaign: c,
		Session: report.NewSession(ctx, nil), Styles: common.NewStyles(common.DefaultTheme()),
		Keys: common.DefaultKeyMap(), Now: time.Now})
	m.SetSize(100, 40)
	bench(m).Press("s")
	if len(m.res.AllToAll) == 0 {
		t.Fatalf("no All-to-All rows: state %v, error %v\n%s", m.r.State, m.r.Err, ansi.Strip(m.View()))
	}
	if a := m.res.AllToAll[0]; a.Nodes != 2 || a.NProc != 16 {
		t.Errorf("All-to-All over %d ranks on %d nodes, want 16 on 2", a.NProc, a.Nodes)
	}
	panetest.Shows(t, m.View(), "8 ranks × 2 nodes", "traffic leaves the node: 8 ranks on each of 2 nodes")
}

// A reason with a word longer than the pane (a path) still wraps to lines
// that fit, and an empty text adds no line.
func TestWrapTextFits(t *testing.T) {
	long := "the step has no collectives: see /very/long/path/" + strings.Repeat("x", 60) + " for the layout and more words after it"
	lines := wrapText(long, 40)
	if len(lines) < 3 {
		t.Fatalf("want several lines, got %q", lines)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("line %q is %d cells wide, over 40", l, w)
		}
	}
	if got := wrapText("  ", 40); got != nil {
		t.Errorf("empty text gave %q", got)
	}
}

// The burst between GEMMs has its column; a figure the script left out is
// said in the pane, whole (wrapped, not cut), at 80×24 as when tall,
// below the tables.
func TestWarningsShown(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	warn := "between GEMMs: the graph with all-reduces at M=8 was not slower than the GEMMs alone (2.114 ms vs 2.120 ms): no figure"
	m.add([]phases.Event{
		phases.New(time.Now(), phases.KindNCCLBurst, phases.NCCLBurst{M: 8, Count: 123, Bytes: 114688, TotalMs: 4.2, PerOpUs: 34, NProc: 2, GraphMs: 2, GraphPerOpUs: 16}),
		phases.New(time.Now(), phases.KindNCCLWarning, phases.NCCLWarning{M: 8, Text: warn}),
		phases.New(time.Now(), phases.KindNCCLBurst, phases.NCCLBurst{M: 64, Count: 123, Bytes: 917504, TotalMs: 4.9, PerOpUs: 40, NProc: 2, GraphMs: 2.7, GraphPerOpUs: 22, InStepMs: 3.125}),
	})
	m.SetSize(80, 24)
	panetest.Shows(t, m.View(), "betw. ms", "41.7      -     3.125")
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		m.SetSize(size[0], size[1])
		for i := 0; i < 30; i++ {
			m.Update(panetest.Key("j"))
		}
		v := ansi.Strip(m.View())
		if !strings.Contains(strings.Join(strings.Fields(v), " "), "warning: "+warn) {
			t.Errorf("%dx%d: the warning is not shown whole:\n%s", size[0], size[1], v)
		}
		panetest.Fits(t, m.View(), size[0], size[1])
	}
}

// A script error is said whole (wrapped, not cut) with the M it happened
// at, as the warnings that follow it name that M.
func TestErrorShownWhole(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	m.Update(common.EventsMsg{At: time.Now(), Events: []phases.Event{
		phases.New(time.Now(), phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, TotalMs: 5.2, PerOpUs: 42, NProc: 2}),
		phases.New(time.Now(), phases.KindNCCLError, phases.ScriptError{What: "cuda graph capture of all_reduce", Step: 1,
			Err: "CUDA error: operation not permitted when stream is capturing (cudaErrorStreamCaptureUnsupported)"}),
	}})
	m.SetSize(80, 24)
	v := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	if !strings.Contains(v, "error: cuda graph capture of all_reduce at M=1: CUDA error: operation not permitted when stream is capturing (cudaErrorStreamCaptureUnsupported)") {
		t.Errorf("the error is not shown whole:\n%s", m.View())
	}
	panetest.Fits(t, m.View(), 80, 24)
}

// At 80×24 (the pane's 78×19) the idle hint is whole, wrapped, not cut.
func TestIdleHintWholeAt80(t *testing.T) {
	m, _ := newPane(t, sim.Options{})
	m.SetSize(78, 19)
	v := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	if !strings.Contains(v, "(ranks, batch sizes and launcher from the campaign)") {
		t.Fatalf("idle hint cut:\n%s", ansi.Strip(m.View()))
	}
}

package load_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote/sim"
)

func simNodes(t *testing.T, opt sim.Options, n, fault int) []load.Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ds, err := sim.StartNodes(ctx, opt, n, fault)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var nodes []load.Node
	for _, d := range ds {
		nodes = append(nodes, load.Node{Host: d})
	}
	t.Cleanup(func() {
		for _, d := range ds {
			d.Close()
		}
		cancel()
	})
	return nodes
}

// Two simulated nodes serving TP16 load to ready: every node is polled and
// followed, each event names its node, and the load is one phase run.
func TestGroupTwoSimNodesReady(t *testing.T) {
	t.Parallel()
	nodes := simNodes(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true}, 2, -1)
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	g := load.NewGroup(load.Complete(load.Config{LogPath: sim.DefaultLogPath, HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, ExpectGiB: sim.DefaultWeightsGiB}), nodes)
	end, err := g.Until(ctx, em)
	evs := stop()
	if err != nil || end.Kind != load.EndReady || !strings.Contains(end.Reason, "sim0") {
		t.Fatalf("ending %+v, %v", end, err)
	}
	samples := map[string]int{}
	logs := map[string]int{}
	k := kinds(evs)
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case phases.GPUSample:
			samples[d.Host] += len(d.GPUs)
		case phases.LogLine:
			logs[d.Node]++
		case phases.LoadState:
			for _, gl := range d.GPUs {
				if gl.Host != d.Host {
					t.Fatalf("GPU %d of %s says host %q", gl.Index, d.Host, gl.Host)
				}
			}
		}
	}
	if samples["sim0"] == 0 || samples["sim1"] == 0 || logs["sim0"] == 0 || logs["sim1"] == 0 {
		t.Fatalf("samples %v, log lines %v", samples, logs)
	}
	if k[phases.KindSessionPhaseStarted] != 1 || k[phases.KindSessionPhaseFinished] != 1 {
		t.Fatalf("phase brackets: %v", k)
	}
}

// One node stalls alone: the ending names it, as does the stall event, and
// the diagnosis is that node's.
func TestGroupOneNodeStalls(t *testing.T) {
	t.Parallel()
	nodes := simNodes(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, StallAtGiB: 40}, 2, 1)
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	g := load.NewGroup(load.Complete(load.Config{LogPath: sim.DefaultLogPath, HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, StallAfter: 2 * time.Second, DiagnoseWindow: 200 * time.Millisecond}), nodes)
	end, err := g.Until(ctx, em)
	evs := stop()
	if err != nil || end.Kind != load.EndStalled {
		t.Fatalf("ending %+v, %v", end, err)
	}
	if !strings.Contains(end.Reason, "on sim1, GPUs 0-7,") {
		t.Fatalf("reason %q does not name the node", end.Reason)
	}
	var stalled []string
	for _, ev := range evs {
		if st, ok := ev.Data.(phases.Stall); ok {
			stalled = append(stalled, st.Node)
		}
		if fin, ok := ev.Data.(phases.PhaseFinished); ok && !strings.Contains(fin.Err, "sim1") {
			t.Fatalf("phase finished without the node: %+v", fin)
		}
	}
	if len(stalled) == 0 || stalled[0] != "sim1" {
		t.Fatalf("stall events from %v, want sim1 first", stalled)
	}
}

// A group followed without an emitter (the campaign run's quiet follow,
// where the cockpit's own watcher reports) still ends when the head serves.
func TestGroupQuietUntilReady(t *testing.T) {
	t.Parallel()
	nodes := simNodes(t, sim.Options{LoadTime: 1500 * time.Millisecond, AutoStart: true}, 2, -1)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	g := load.NewGroup(load.Complete(load.Config{LogPath: sim.DefaultLogPath, HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond}), nodes)
	end, err := g.Until(ctx, nil)
	if err != nil || end.Kind != load.EndReady {
		t.Fatalf("ending %+v, %v", end, err)
	}
}

// One node fails alone (NCCL at distributed init): the ending and the
// failure event name it.
func TestGroupOneNodeFails(t *testing.T) {
	t.Parallel()
	nodes := simNodes(t, sim.Options{LoadTime: 2 * time.Second, AutoStart: true, FailWith: "nccl"}, 2, 1)
	em, stop := collect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	g := load.NewGroup(load.Complete(load.Config{LogPath: sim.DefaultLogPath, HealthURL: load.HealthURL("http://" + sim.DefaultServerAddr),
		Poll: 200 * time.Millisecond, StallAfter: time.Minute}), nodes)
	end, err := g.Until(ctx, em)
	evs := stop()
	if err != nil || end.Kind != load.EndFailed || !strings.HasPrefix(end.Reason, "node sim1: nccl") {
		t.Fatalf("ending %+v, %v", end, err)
	}
	for _, ev := range evs {
		if f, ok := ev.Data.(phases.LoadFailure); ok && f.Node != "sim1" {
			t.Fatalf("failure from %q: %+v", f.Node, f)
		}
	}
}

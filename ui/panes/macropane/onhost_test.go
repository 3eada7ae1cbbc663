package macropane

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

// inProcessHost is this machine standing in for a simulated GPU host, so
// the load generator's agent runs in this process by the path a real host
// takes.
type inProcessHost struct{ remote.Host }

func (inProcessHost) Simulated() bool { return true }

// With macro.loadgen: host the pane runs the sweep on the host: the same
// levels, journal and steering as a sweep run here.
func TestLiveSweepOnHost(t *testing.T) {
	h := newHarness(t, []int{1, 2, 4}, 400, 64)
	h.m.d.Host = inProcessHost{local.New()}
	h.m.d.Campaign.Macro.Loadgen.Mode = "host"
	h.press("s")
	if !h.m.Busy() {
		t.Fatal("s starts a sweep")
	}
	h.pump(30*time.Second, func() bool {
		return h.m.sweep != nil && h.m.sweep.Concurrency() == 1 && h.m.cur != nil && h.m.cur.HaveTick
	})
	if len(h.status) == 0 || !strings.Contains(h.status[0].Text, "load generator on host") {
		t.Fatalf("the start does not say the load runs on the host: %v", h.status)
	}
	h.press("s") // stop: the first level ends with what it has
	h.pump(30*time.Second, func() bool { return !h.m.Busy() })
	if len(h.m.levels) != 1 || h.m.levels[0].Completed == 0 {
		t.Fatalf("levels %+v; status %v", h.m.levels, h.status)
	}
	if !strings.Contains(h.lastStatus(), "stopped by the operator") {
		t.Fatalf("status %v", h.status)
	}
	var started, finished int
	for _, ev := range h.m.d.Session.Events() {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			started++
			if p, _ := d.Params.(map[string]any); p["loadgen"] != "host" {
				t.Errorf("the journalled start does not say the load ran on the host: %v", d.Params)
			}
		case phases.PhaseFinished:
			finished++
		}
	}
	if started != 1 || finished != 1 {
		t.Fatalf("journal: %d starts, %d finishes", started, finished)
	}
}

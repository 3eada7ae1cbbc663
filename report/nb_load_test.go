package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// TestNotebookLeavesOutEmptyLoads: a load watch that saw nothing (started
// while nothing served, then stopped) is not listed as a run of the load;
// the notebook says how many were left out.
func TestNotebookLeavesOutEmptyLoads(t *testing.T) {
	used := 50.0 * 1024
	evs := budgetEvents(
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load},
		phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeCancelled},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load},
		phases.KindLoadServer, phases.ServerEvent{Action: "start", Detail: "pid 7"},
		phases.KindLoadGPUCoarse, phases.GPUSample{Host: "gpu1", GPUs: []phases.GPU{{Index: 0, MemoryUsedMiB: &used}}},
		phases.KindLoadMilestone, phases.Milestone{Stage: phases.StageReady, AtS: 30},
		phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeDone},
	)
	b, err := RenderNotebook(evs, NotebookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nb := string(b)
	if strings.Contains(nb, "Run 1 of 2") || strings.Contains(nb, "### Run") {
		t.Errorf("the empty load is listed as a run:\n%s", nb)
	}
	if !strings.Contains(nb, "1 load watch(es) that saw nothing") || !strings.Contains(nb, "server **start**: pid 7") {
		t.Errorf("notebook:\n%s", nb)
	}
}

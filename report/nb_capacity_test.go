package report

import (
	"strings"
	"testing"
)

// A campaign with a capacity section gets its plan in the notebook, from
// the journal's last sweep (here the demo's, recorded before sweeps
// journalled their SLO and deployment: the section's SLO is judged on
// percentiles, and one replica is the 8 GPUs the system info counted).
func TestNotebookCapacity(t *testing.T) {
	rr, err := ReadJournalFile("testdata/demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	opts := goldenOpts()
	opts.Capacity = &CapacityAsk{Rate: 200, SLO: "tpot=50ms", Headroom: 0.2}
	md, _ := RenderNotebook(rr.Events, opts)
	sw, err := LoadSweep("testdata/demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCapacity(sw, *opts.Capacity)
	if err != nil || p.Replicas == nil {
		t.Fatalf("plan %v %+v", err, p)
	}
	for _, want := range []string{"## Capacity", "**200 req/s within", p.Text[:40], "| level | req/s | out tok/s | E2E mean ms |",
		"Little's law: concurrency = rate × E2E", "judged on percentiles", "8 GPUs"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
	// Without the section, no capacity.
	if md, _ := RenderNotebook(rr.Events, goldenOpts()); strings.Contains(string(md), "## Capacity") {
		t.Error("capacity section without a capacity ask")
	}
	// No SLO anywhere: the section says so.
	opts.Capacity = &CapacityAsk{Rate: 1, Headroom: 0.2}
	md, _ = RenderNotebook(rr.Events, opts)
	if !strings.Contains(string(md), "## Capacity\n\nNo plan: ") || !strings.Contains(string(md), "the sweep had no SLO") {
		t.Errorf("no SLO: the section does not say so")
	}
}

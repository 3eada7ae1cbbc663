package report

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A stall's diagnosis is in the load's story, after the stall, with its
// evidence, processes and hint.
func TestNotebookDiagnosis(t *testing.T) {
	evs := seedEvents()
	var at time.Time
	for i, ev := range evs {
		if ev.Kind == phases.KindLoadStall {
			at = ev.Time.Add(3 * time.Second)
			d := phases.Diagnosis{Trigger: "stall", Verdict: "weights I/O stopped (0 B/s for 5 min, GPUs idle)",
				Why:   []string{"8 ranks in safetensors/torch.py: _read_into", "600.0 GB read before it stopped"},
				Procs: []phases.ProcEvidence{{PID: 4101, Name: "VLLM::Worker_TP0", State: "S", CPUPct: 0.3, IOKnown: true, GPU: 0, GPUMemMiB: 77619}},
				Hints: []string{"py-spy is not on the host"}, SampleS: 2,
				Ranks: []phases.RankEvidence{{Rank: 0, Stage: "weights", LastLine: "Loading safetensors checkpoint shards: 82% Completed | 132/161"},
					{Rank: 3, Stage: "starting", LastLine: "Starting to load model", Behind: true}}}
			evs = append(evs[:i+1], append([]phases.Event{phases.New(at, phases.KindLoadDiagnosis, d)}, evs[i+1:]...)...)
			break
		}
	}
	md, err := RenderNotebook(evs, goldenOpts())
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{
		"**diagnosis** (on the stall): weights I/O stopped (0 B/s for 5 min, GPUs idle)",
		"  - 8 ranks in safetensors/torch.py: _read_into",
		"  - pid 4101 `VLLM::Worker_TP0`: state S, 0% CPU, 0 B/s read over 2 s, GPU 0 (75.8 GiB)",
		"  - hint: py-spy is not on the host",
		"  - rank 0 at weights, last line: `Loading safetensors checkpoint shards: 82% Completed | 132/161`",
		"  - rank 3 **behind** at starting, last line: `Starting to load model`",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
	if strings.Index(s, "**stall**") > strings.Index(s, "**diagnosis**") {
		t.Error("the diagnosis comes before the stall it explains")
	}
}

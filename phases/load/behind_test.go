package load

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load/diagnose"
	"github.com/profdeck/profdeck/remote/local"
)

// Seven ranks log their CUDA-graph capture, rank 3 stops after its weights:
// the tracker keeps each rank's stage and last line, and the diagnosis says
// rank 3 is behind.
func TestRankBehindDiagnosed(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := NewTracker("h", 0, time.Minute, now)
	for r := 0; r < 8; r++ {
		feed(tr, now, fmt.Sprintf("(Worker_TP%d pid=%d) INFO 04-09 20:31:05 [gpu_model_runner.py:2040] Model loading took 74.40 GiB and 380.1 seconds", r, 100+r))
		if r != 3 {
			feed(tr, now, fmt.Sprintf("(Worker_TP%d pid=%d) INFO 04-09 20:33:05 [gpu_model_runner.py:2301] Graph capturing finished in 12 secs, took 1.2 GiB", r, 100+r))
		}
	}
	ranks := tr.Ranks()
	if len(ranks) != 8 || ranks[3].Stage != "weights" || ranks[0].Stage != "cuda_graphs" {
		t.Fatalf("ranks %+v", ranks)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The process sampled is this test itself: alive, so the ranks decide.
	d, err := diagnose.Diagnose(ctx, diagnose.Config{Host: local.New(), PIDs: []int{os.Getpid()}, Ranks: ranks,
		Window: 200 * time.Millisecond, Stage: tr.Stage(), Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != "rank 3 behind (the others reached CUDA graphs)" || len(d.Why) == 0 {
		t.Errorf("verdict %q why %q", d.Verdict, d.Why)
	}
}

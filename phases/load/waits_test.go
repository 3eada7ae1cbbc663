package load

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
)

// The log's own waits are said in words for the stall banner.
func TestWaitsText(t *testing.T) {
	if got := WaitsText(nil); got != "" {
		t.Errorf("no waits: %q", got)
	}
	got := WaitsText([]vllmlog.Stall{{Kind: vllmlog.StallSHM, Seconds: 60, Time: "10:39:02"},
		{Kind: vllmlog.StallSHM, Seconds: 60, Time: "10:40:02"}, {Kind: vllmlog.StallNCCL, Time: "10:40:05"}})
	want := "2 shared-memory broadcast waits of " + units.Duration(60) + ", 1 NCCL collective wait, the last at 10:40:05"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A stall carries the waits the log printed while the load was stuck (the
// banner shows them): the shm-broadcast warning does not count as progress.
func TestStallCarriesTheLogsWaits(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tr := NewTracker("sim", 100, 2*time.Minute, t0)
	feed(tr, t0, "(Worker_TP0 pid=1) INFO 11-29 10:00:00 [gpu_model_runner.py:1] Starting to load model x...")
	tr.Sample(t0, gpus(8, 40))
	now := t0.Add(time.Minute)
	feed(tr, now, "(EngineCore_DP0 pid=7) INFO 11-29 10:01:00 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds.")
	now = now.Add(90 * time.Second)
	tr.Sample(now, gpus(8, 40))
	st := tr.CheckStall(now)
	if st == nil {
		t.Fatal("no stall: the shm-broadcast warning was read as progress")
	}
	if !strings.Contains(st.Waits, "1 shared-memory broadcast wait of") || !strings.Contains(st.Waits, "10:01:00") {
		t.Errorf("waits = %q", st.Waits)
	}
}

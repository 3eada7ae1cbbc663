package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

// waitMem waits until every simulated GPU uses at least gib.
func startStalled(t *testing.T, opt sim.Options) (*sim.Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	o := d.Options()
	// The launch with the torch profiler on is the one that stalls.
	if err := d.Run(ctx, "env VLLM_TORCH_PROFILER_DIR=/tmp/vllm_profile vllm serve "+o.Model+" > "+o.LogPath+" 2>&1 &", nil, nil); err != nil {
		t.Fatal(err)
	}
	for {
		out, _ := remoteOutput(ctx, d, "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits")
		if strings.Count(out, "\n") >= o.GPUs && !strings.Contains(out, " 0\n") && strings.HasPrefix(out, "30") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the simulated load never stalled: %q", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return d, ctx
}

// A stall with the profiler on, on the simulated host: the workers (found
// in the launch's process group and on the GPUs) read nothing and the GPUs
// idle, so the weights I/O stopped; py-spy puts the 8 ranks in one frame.
func TestSimStallWithProfiler(t *testing.T) {
	d, ctx := startStalled(t, sim.Options{LoadTime: 2 * time.Second, StallAtGiB: 30, StallWhenProfiling: true, Seed: 1})
	time.Sleep(300 * time.Millisecond) // let the stalled counters settle
	diag, err := Diagnose(ctx, Config{Host: d, PGID: d.ServerPID(), GPUApps: true, Window: 500 * time.Millisecond,
		Stalled: 5 * time.Minute, Trigger: "stall"})
	if err != nil {
		t.Fatal(err)
	}
	if diag.Verdict != "weights I/O stopped (0 B/s for 5 min, GPUs idle)" {
		t.Errorf("verdict %q (procs %+v)", diag.Verdict, diag.Procs)
	}
	if len(diag.Procs) != 10 || len(diag.GPUs) != 8 {
		t.Errorf("%d procs, %d GPUs: %+v", len(diag.Procs), len(diag.GPUs), diag.Procs)
	}
	if len(diag.Stacks) == 0 || StackText(diag.Stacks[0]) != "8 ranks in safetensors/torch.py: _read_into" {
		t.Errorf("stacks %+v", diag.Stacks)
	}
	if !diag.Simulated || len(diag.Hints) != 0 {
		t.Errorf("simulated %v hints %q", diag.Simulated, diag.Hints)
	}
}

// Without py-spy on the host the diagnosis still comes, with a one-line
// hint to install it; a container's processes come from docker top.
func TestSimNoPySpyHint(t *testing.T) {
	d, ctx := startStalled(t, sim.Options{LoadTime: 2 * time.Second, StallAtGiB: 30, NoPySpy: true, Seed: 2})
	diag, err := Diagnose(ctx, Config{Host: d, PIDs: []int{d.ServerPID()}, GPUApps: true, Window: 300 * time.Millisecond, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if len(diag.Hints) != 1 || !strings.Contains(diag.Hints[0], "pip install py-spy") || len(diag.Stacks) != 0 {
		t.Errorf("hints %q stacks %+v", diag.Hints, diag.Stacks)
	}
	if !strings.HasPrefix(diag.Verdict, "weights I/O stopped") {
		t.Errorf("verdict %q", diag.Verdict)
	}
	d.Close()
	diag, err = Diagnose(ctx, Config{Host: d, PIDs: []int{d.ServerPID()}, Window: 100 * time.Millisecond, Trigger: "request"})
	if err == nil && !strings.HasPrefix(diag.Verdict, "server process gone") {
		t.Errorf("after close: %q", diag.Verdict)
	}
}

func remoteOutput(ctx context.Context, d *sim.Deployment, cmd string) (string, error) {
	return remote.Output(ctx, d, cmd)
}

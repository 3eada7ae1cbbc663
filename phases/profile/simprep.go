package profile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

// PrepareSim readies the simulated deployment for a capture: when its
// server runs without the profiler, it (re)starts it with
// VLLM_TORCH_PROFILER_DIR set to dir, and waits until it serves.
func PrepareSim(ctx context.Context, d *sim.Deployment, dir string) error {
	if d.ProfilerEnabled() && d.Ready() {
		return nil
	}
	if dir == "" {
		return errors.New("no profiler directory to start the simulated server with")
	}
	dir, err := remote.ResolveUID(ctx, d, dir)
	if err != nil {
		return err
	}
	o := d.Options()
	cmd := "VLLM_TORCH_PROFILER_DIR=" + remote.Quote(dir) + " vllm serve " + remote.Quote(o.Model) +
		" --tensor-parallel-size " + fmt.Sprint(o.GPUs) + " > " + remote.Quote(o.LogPath) + " 2>&1 &"
	if !d.ProfilerEnabled() {
		if _, err := remote.Output(ctx, d, cmd); err != nil {
			return fmt.Errorf("starting the simulated server with the profiler: %w", err)
		}
	}
	deadline := time.Now().Add(o.LoadTime + time.Minute)
	for !d.Ready() {
		if time.Now().After(deadline) {
			return fmt.Errorf("the simulated server did not become ready in %s (stage %s)", o.LoadTime+time.Minute, d.Stage())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

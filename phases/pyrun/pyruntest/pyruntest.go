// Package pyruntest holds what the micro and nccl engine tests share: a
// simulated deployment for one test, the Kimi-K2.5 TP8 plan and the check
// for a python3 that sees a CUDA GPU. Only tests import it.
package pyruntest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote/sim"
)

// StartSim starts a simulated deployment for one test, closed when it ends;
// ctx ends after 30 s.
func StartSim(t *testing.T, opt sim.Options) (context.Context, *sim.Deployment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	d, err := sim.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return ctx, d
}

// KimiPlan is the decode-step plan of the kimi-k2.5 preset at TP8 for the
// batch sizes given.
func KimiPlan(t *testing.T, batch ...int) model.Plan {
	t.Helper()
	c, _ := model.Preset("kimi-k2.5")
	p, err := model.Build(c, model.Options{TP: 8, Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// CUDAPython is python3 when it imports torch and sees a CUDA GPU; the
// test skips otherwise (the engines' kernels need one).
func CUDAPython(t *testing.T) string {
	t.Helper()
	if err := exec.Command("python3", "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)").Run(); err != nil {
		t.Skip("no python3 with torch and a CUDA GPU here")
	}
	return "python3"
}

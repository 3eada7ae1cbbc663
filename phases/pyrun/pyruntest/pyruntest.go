// Package pyruntest holds what the micro and nccl engine tests share: a
// simulated deployment for one test and the Kimi-K2.5 TP8 plan. Only tests
// import it.
package pyruntest

import (
	"context"
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

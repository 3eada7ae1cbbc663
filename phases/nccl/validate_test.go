package nccl_test

import (
	"context"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/phases/validatetest"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

// The run fills in no default: a configuration missing a value is refused
// before anything reaches the host, the phase's finish naming the field.
func TestNCCLRefusesMissingValues(t *testing.T) {
	full := nccl.Complete(nccl.Config{Host: local.New(), NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8)})
	validatetest.EachCleared(t, full, map[string]func(*nccl.Config){
		"Host":       func(c *nccl.Config) { c.Host = nil },
		"Torchrun":   func(c *nccl.Config) { c.Torchrun = "" },
		"Python":     func(c *nccl.Config) { c.Python = "" },
		"NProc":      func(c *nccl.Config) { c.NProc = 0 },
		"WorkDir":    func(c *nccl.Config) { c.WorkDir = "" },
		"Batch":      func(c *nccl.Config) { c.Batch, c.Plan.Batch = nil, nil },
		"Tokens":     func(c *nccl.Config) { c.Tokens = nil },
		"MasterPort": func(c *nccl.Config) { c.Nodes, c.MasterPort = []remote.Host{local.New(), local.New()}, 0 },
	}, func(field string, cfg nccl.Config) {
		validatetest.FinishNames(t, field, "nccl: "+field, func(em *phases.Emitter) error {
			return nccl.Run(context.Background(), cfg, em)
		})
	})
}

package nccl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

// The run fills in no default: a configuration missing a value is refused
// before anything reaches the host, the phase's finish naming the field.
func TestNCCLRefusesMissingValues(t *testing.T) {
	full := nccl.Complete(nccl.Config{Host: local.New(), NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8)})
	if err := full.Validate(); err != nil {
		t.Fatalf("a complete configuration refused: %v", err)
	}
	for field, clear := range map[string]func(*nccl.Config){
		"Host":       func(c *nccl.Config) { c.Host = nil },
		"Torchrun":   func(c *nccl.Config) { c.Torchrun = "" },
		"Python":     func(c *nccl.Config) { c.Python = "" },
		"NProc":      func(c *nccl.Config) { c.NProc = 0 },
		"WorkDir":    func(c *nccl.Config) { c.WorkDir = "" },
		"Batch":      func(c *nccl.Config) { c.Batch, c.Plan.Batch = nil, nil },
		"Tokens":     func(c *nccl.Config) { c.Tokens = nil },
		"MasterPort": func(c *nccl.Config) { c.Nodes, c.MasterPort = []remote.Host{local.New(), local.New()}, 0 },
	} {
		cfg := full
		clear(&cfg)
		events := make(chan phases.Event, 8)
		err := nccl.Run(context.Background(), cfg, &phases.Emitter{Out: events})
		if err == nil || !strings.Contains(err.Error(), "nccl: "+field) {
			t.Errorf("%s missing: %v", field, err)
		}
		close(events)
		var finished bool
		for ev := range events {
			if f, ok := ev.Data.(phases.PhaseFinished); ok && f.Outcome == phases.OutcomeFailed && strings.Contains(f.Err, field) {
				finished = true
			}
		}
		if !finished {
			t.Errorf("%s missing: no finish naming it", field)
		}
	}
}

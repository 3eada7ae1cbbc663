package micro_test

import (
	"context"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote/local"
)

// The run fills in no default: a configuration missing a value is refused
// before anything reaches the host, the phase's finish naming the field.
func TestMicroRefusesMissingValues(t *testing.T) {
	full := micro.Complete(micro.Config{Host: local.New(), Plan: pyruntest.KimiPlan(t, 1)})
	if err := full.Validate(); err != nil {
		t.Fatalf("a complete configuration refused: %v", err)
	}
	for field, clear := range map[string]func(*micro.Config){
		"Host":    func(c *micro.Config) { c.Host = nil },
		"Python":  func(c *micro.Config) { c.Python = " " },
		"WorkDir": func(c *micro.Config) { c.WorkDir = "" },
	} {
		cfg := full
		clear(&cfg)
		events := make(chan phases.Event, 8)
		err := micro.Run(context.Background(), cfg, &phases.Emitter{Out: events})
		if err == nil || !strings.Contains(err.Error(), "micro: "+field+":") {
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

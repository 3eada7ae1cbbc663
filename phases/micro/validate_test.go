package micro_test

import (
	"context"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/phases/validatetest"
	"github.com/profdeck/profdeck/remote/local"
)

// The run fills in no default: a configuration missing a value is refused
// before anything reaches the host, the phase's finish naming the field.
func TestMicroRefusesMissingValues(t *testing.T) {
	full := micro.Complete(micro.Config{Host: local.New(), Plan: pyruntest.KimiPlan(t, 1)})
	validatetest.EachCleared(t, full, map[string]func(*micro.Config){
		"Host":    func(c *micro.Config) { c.Host = nil },
		"Python":  func(c *micro.Config) { c.Python = " " },
		"WorkDir": func(c *micro.Config) { c.WorkDir = "" },
	}, func(field string, cfg micro.Config) {
		validatetest.FinishNames(t, field, "micro: "+field+":", func(em *phases.Emitter) error {
			return micro.Run(context.Background(), cfg, em)
		})
	})
}

package nccl

import "github.com/profdeck/profdeck/phases/defaultstest"

// Complete is cfg with each value a run needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (which this package
// may not import; defaultstest.NCCL, which the campaign's tests check).
// The batch sizes stay the plan's when the plan has some. The host, the
// ranks and the plan are the test's to give.
func Complete(cfg Config) Config {
	planned := len(cfg.Batch) == 0 && len(cfg.Plan.Batch) > 0
	batch := cfg.Batch
	defaultstest.Fill(&cfg, defaultstest.NCCL)
	if planned {
		cfg.Batch = batch
	}
	return cfg
}

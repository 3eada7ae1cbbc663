package nccl

// Complete is cfg with each value a run needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (which this package
// may not import). The host, the ranks and the plan are the test's to give.
func Complete(cfg Config) Config {
	if cfg.Torchrun == "" {
		cfg.Torchrun = "torchrun"
	}
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = "/tmp/profdeck"
	}
	if len(cfg.Batch) == 0 && len(cfg.Plan.Batch) == 0 {
		cfg.Batch = []int{1, 8, 64, 128}
	}
	if len(cfg.Tokens) == 0 {
		cfg.Tokens = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
	}
	if cfg.MasterPort == 0 {
		cfg.MasterPort = 29500
	}
	return cfg
}

package micro

// Complete is cfg with each value a run needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (which this package
// may not import). The host and the plan are the test's to give.
func Complete(cfg Config) Config {
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = "/tmp/profdeck"
	}
	return cfg
}

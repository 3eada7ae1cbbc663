package profile

import "time"

// Complete is cfg with each value a capture needs that cfg leaves at zero
// set for a test: the values the campaign gives by default (which this
// package may not import), so that a test writes only what it is about.
// The host, the URL and the profiler directory are the test's to give.
func Complete(cfg Config) Config {
	if cfg.API == "" {
		cfg.API = "completions"
	}
	if cfg.Steps == 0 {
		cfg.Steps = 50
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = []int{1}
	}
	if cfg.InputLen == 0 {
		cfg.InputLen = 256
	}
	if cfg.OutputLen == 0 {
		cfg.OutputLen = 128
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 30 * time.Minute
	}
	if cfg.RemoteOver == 0 {
		cfg.RemoteOver = 32 << 20
	}
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.Top == 0 {
		cfg.Top = TopN
	}
	return cfg
}

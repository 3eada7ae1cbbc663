package load

import "time"

// Complete is cfg with each value a watcher needs that cfg leaves at zero
// set for a test: the values the campaign gives by default (which this
// package may not import), so that a test writes only what it is about.
// The host is the test's to give.
func Complete(cfg Config) Config {
	if cfg.LogPath == "" {
		cfg.LogPath = "/var/log/vllm/server.log"
	}
	if cfg.StallAfter == 0 {
		cfg.StallAfter = 5 * time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = 10 * time.Second
	}
	if cfg.DiagnoseWindow == 0 {
		cfg.DiagnoseWindow = 2 * time.Second
	}
	return cfg
}

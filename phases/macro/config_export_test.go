package macro

import "time"

// Complete is cfg with each value a sweep needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (campaign.Defaults,
// which this package may not import), so that a test writes only what it
// is about. A value given, valid or not, is kept.
func Complete(cfg Config) Config {
	if cfg.API == "" {
		cfg.API = APICompletions
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
	}
	if cfg.Requests == 0 && cfg.Duration == 0 {
		cfg.Requests = 64
	}
	if cfg.InputLen == 0 {
		cfg.InputLen = 256
	}
	if cfg.OutputLen == 0 {
		cfg.OutputLen = 256
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.ClientBoundLag == 0 {
		cfg.ClientBoundLag = 10 * time.Millisecond
	}
	if cfg.Repeat == 0 {
		cfg.Repeat = 1
	}
	if cfg.Arrivals == "" {
		cfg.Arrivals = ArrivalsPoisson
	}
	if cfg.Burstiness == 0 {
		cfg.Burstiness = 1
	}
	if cfg.LatencyFrom == "" {
		cfg.LatencyFrom = LatencySent
	}
	if cfg.SearchTolerance == 0 {
		cfg.SearchTolerance = 0.05
	}
	if cfg.SearchFrom == 0 {
		cfg.SearchFrom = 1
		if cfg.Rate > 0 {
			cfg.SearchFrom = cfg.Rate
		}
	}
	return cfg
}

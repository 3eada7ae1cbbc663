package macro

import "github.com/profdeck/profdeck/phases/defaultstest"

// Complete is cfg with each value a sweep needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (campaign.Defaults,
// which this package may not import; defaultstest.Macro, which the
// campaign's tests check), so that a test writes only what it is about. A
// value given, valid or not, is kept. As in the campaign, a time budget
// (Duration) without a request count keeps the count at 0, and a rate
// search starts at the rate given.
func Complete(cfg Config) Config {
	if cfg.SearchFrom == 0 && cfg.Rate > 0 {
		cfg.SearchFrom = cfg.Rate
	}
	byTime := cfg.Requests == 0 && cfg.Duration > 0
	defaultstest.Fill(&cfg, defaultstest.Macro)
	if byTime {
		cfg.Requests = 0
	}
	return cfg
}

package profile

import "github.com/profdeck/profdeck/phases/defaultstest"

// Complete is cfg with each value a capture needs that cfg leaves at zero
// set for a test: the values the campaign gives by default (which this
// package may not import; defaultstest.Profile, which the campaign's tests
// check), so that a test writes only what it is about. The host, the URL
// and the profiler directory are the test's to give.
func Complete(cfg Config) Config {
	defaultstest.Fill(&cfg, defaultstest.Profile)
	return cfg
}

package micro

import "github.com/profdeck/profdeck/phases/defaultstest"

// Complete is cfg with each value a run needs that cfg leaves at zero set
// for a test: the values the campaign gives by default (which this package
// may not import; defaultstest.Micro, which the campaign's tests check).
// The host and the plan are the test's to give.
func Complete(cfg Config) Config {
	defaultstest.Fill(&cfg, defaultstest.Micro)
	return cfg
}

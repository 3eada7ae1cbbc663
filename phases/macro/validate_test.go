package macro_test

import (
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/validatetest"
)

// The sweep fills in no default: a configuration missing a value the sweep
// needs is refused before any request, and the error names the field.
func TestSweepRefusesMissingValues(t *testing.T) {
	full := macro.Complete(macro.Config{URL: "http://127.0.0.1:1"})
	validatetest.EachCleared(t, full, map[string]func(*macro.Config){
		"URL":         func(c *macro.Config) { c.URL = "" },
		"API":         func(c *macro.Config) { c.API = "" },
		"Concurrency": func(c *macro.Config) { c.Concurrency = nil },
		"Requests":    func(c *macro.Config) { c.Requests = 0 },
		"InputLen":    func(c *macro.Config) { c.InputLen = 0 },
		"OutputLen":   func(c *macro.Config) { c.OutputLen = 0 },
		"Timeout":     func(c *macro.Config) { c.Timeout = 0 },
		"Repeat":      func(c *macro.Config) { c.Repeat = 0 },
		"LatencyFrom": func(c *macro.Config) { c.LatencyFrom = "" },
		"ClientBoundLag": func(c *macro.Config) {
			c.ClientBoundLag = 0
		},
		"Arrivals":   func(c *macro.Config) { c.Rate, c.Arrivals = 5, "" },
		"Burstiness": func(c *macro.Config) { c.Rate, c.Burstiness = 5, 0 },
		"SearchTolerance": func(c *macro.Config) {
			c.Search, c.SLO, c.SearchTolerance = phases.SearchConcurrency, "tpot=50ms", 0
		},
		"SearchFrom": func(c *macro.Config) { c.Search, c.SLO, c.SearchFrom = phases.SearchRate, "tpot=50ms", 0 },
	}, func(field string, cfg macro.Config) {
		err := validatetest.Names(t, field, cfg)
		if err == nil {
			return
		}
		if _, nerr := macro.NewSweep(cfg); nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("%s missing: NewSweep said %v, Validate %v", field, nerr, err)
		}
		if werr := macro.LoadWorkload(&cfg); field != "URL" && (werr == nil || werr.Error() != err.Error()) {
			t.Errorf("%s missing: LoadWorkload said %v, Validate %v", field, werr, err)
		}
	})
	// What only some sweeps use may be left out by the others: one
	// open-loop level needs no levels, a closed loop no schedule, a sweep
	// with a duration no request count.
	for name, set := range map[string]func(*macro.Config){
		"open loop without levels":   func(c *macro.Config) { c.Rate, c.Concurrency = 5, nil },
		"closed loop, no schedule":   func(c *macro.Config) { c.Arrivals, c.Burstiness, c.SearchTolerance, c.SearchFrom = "", 0, 0, 0 },
		"a duration, no count":       func(c *macro.Config) { c.Requests, c.Duration = 0, 5e9 },
		"no model: the server's own": func(c *macro.Config) { c.Model = "" },
	} {
		cfg := full
		set(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

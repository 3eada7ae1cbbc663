package campaign

import (
	"fmt"
	"strings"
	"time"
)

// The simulated host's quick campaign: a first `profdeck init` then
// `profdeck run` on host: sim finishes in minutes, not the quarter of an
// hour that a GPU server's sweep settings take there. Each applies only to
// a key the campaign file and the flags leave at its default.
const (
	// SimRequests and SimOutputLen make each level short: 16 measured
	// requests (more than the 10 a level needs to be quoted) of 64 output
	// tokens, after SimWarmup warm-up requests.
	SimRequests  = 16
	SimOutputLen = 64
	SimWarmup    = 2
	// SimLoadTime is a whole simulated load (a 30-minute real one); a run
	// loads three times (serve, the restart with the profiler, the last).
	SimLoadTime = 20 * time.Second
)

// QuickSim gives a campaign on host sim the quick settings for each key
// it leaves at its default, and says what it set ("macro.requests 16");
// nothing on another host. loads: the simulated load time too (the
// campaign run and the cockpit load the server; a sweep on its own finds
// it up at once).
func (c *Campaign) QuickSim(loads bool) []string {
	if c.Host != "sim" {
		return nil
	}
	var set []string
	quick := func(key string, isDefault bool, apply func() string) {
		if isDefault && !c.given(key) {
			set = append(set, key+" "+apply())
		}
	}
	m := &c.Macro
	quick("macro.requests", m.Requests == DefaultRequests && m.Duration.Duration == 0, func() string {
		m.Requests = SimRequests
		return fmt.Sprint(SimRequests)
	})
	quick("macro.output_len", m.OutputLen == DefaultOutputLen, func() string {
		m.OutputLen = SimOutputLen
		return fmt.Sprint(SimOutputLen)
	})
	quick("macro.warmup", m.Warmup == Defaults().Macro.Warmup, func() string {
		m.Warmup = SimWarmup
		return fmt.Sprint(SimWarmup)
	})
	quick("sim.load_time", loads && c.Sim.LoadTime.Duration == 0, func() string {
		c.Sim.LoadTime.Duration = SimLoadTime
		return SimLoadTime.String()
	})
	return set
}

// given reports whether the file or a flag set key.
func (c *Campaign) given(key string) bool {
	return c.setBy[key] != "" || lineOf(c.root, key) > 0
}

// QuickSimNote is how a front-end says what QuickSim set ("" when nothing).
func QuickSimNote(set []string) string {
	if len(set) == 0 {
		return ""
	}
	return "host sim: quick settings where the campaign and the flags leave the default: " + strings.Join(set, ", ")
}

package macro

import (
	"math/rand/v2"
	"time"
)

// SetMaxOpenInFlight lowers the open loop's bound for a test.
func SetMaxOpenInFlight(n int) { maxOpenInFlight = n }

// SetDispatchDelay makes the client slow: every send holds the dispatcher d.
func SetDispatchDelay(d time.Duration) { dispatchDelay = d }

// Gaps draws n gaps of an open loop at rate as cfg's arrivals space them.
func Gaps(cfg Config, rate float64, n int) []time.Duration {
	cfg = Complete(cfg)
	a := newArrivals(cfg, rate, rand.NewPCG(uint64(cfg.Seed), 1))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = a.next()
	}
	return out
}

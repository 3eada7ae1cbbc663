package macro

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func TestAudit(t *testing.T) {
	r := &runner{cfg: Config{ClientBoundLag: 10 * time.Millisecond}}
	cases := []struct {
		name   string
		lr     phases.LevelResult
		rate   float64
		steady bool
		bound  string // part of the reason, "" for not bound
	}{
		{"healthy closed loop", phases.LevelResult{Concurrency: 128, MeanInFlight: 127.9, P99SendLagms: 9, MedianE2ELms: 3000, DurationS: 10}, 0, true, ""},
		{"burst lag small beside the request", phases.LevelResult{Concurrency: 128, MeanInFlight: 127.5, P99SendLagms: 40, MedianE2ELms: 3000, DurationS: 10}, 0, true, ""},
		{"slots refilled late", phases.LevelResult{Concurrency: 8, MeanInFlight: 7.9, P99SendLagms: 40, MedianE2ELms: 200, DurationS: 10}, 0, true, "refilled late"},
		{"concurrency not kept", phases.LevelResult{Concurrency: 64, MeanInFlight: 50, DurationS: 10}, 0, true, "in flight on average"},
		{"paused level not judged on in-flight", phases.LevelResult{Concurrency: 64, MeanInFlight: 20, DurationS: 10}, 0, false, ""},
		{"open loop late", phases.LevelResult{P99SendLagms: 12, MedianE2ELms: 3000, DurationS: 10}, 5, true, "later than scheduled"},
		{"open loop on time", phases.LevelResult{P99SendLagms: 2, DurationS: 10}, 5, true, ""},
		{"cpu", phases.LevelResult{Concurrency: 4, MeanInFlight: 4, DurationS: 10, ClientCPUs: 1e6}, 0, true, "cores"},
	}
	for _, c := range cases {
		lr := c.lr
		r.audit(&lr, c.rate, 10*time.Second, c.steady)
		if lr.ClientBound != (c.bound != "") || !strings.Contains(lr.ClientBoundReason, c.bound) {
			t.Errorf("%s: bound %v %q, want %q", c.name, lr.ClientBound, lr.ClientBoundReason, c.bound)
		}
	}
}

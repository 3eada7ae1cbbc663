package fleet

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// An open loop at 160 req/s over two and four agents (λ/N each, evenly
// spaced so that the count is the schedule's, not a draw's): the requests
// sent within the level's two seconds are 160/s within 2%.
func TestOpenLoopDeliversTheRate(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	const rate = 160.0
	for _, n := range []int{2, 4} {
		ms, caches := members(t, n)
		cfg := levelConfig(url, 0)
		cfg.Duration, cfg.Arrivals, cfg.Burstiness, cfg.Warmup = 2*time.Second, macro.ArrivalsConstant, 1, 0
		lv, err := RunOpen(context.Background(), cfg, rate, ms)
		if err != nil {
			t.Fatal(err)
		}
		if lv.Partial || math.Abs(lv.DeliveredRate-rate) > 0.02*rate {
			t.Fatalf("%d agents: delivered %.1f req/s, target %.0f; note %q", n, lv.DeliveredRate, rate, lv.Note())
		}
		t.Logf("%d agents: delivered %.1f req/s of %.0f, ttft p99 %.2f ms", n, lv.DeliveredRate, rate, lv.Metrics["ttft"].P99)
		for _, c := range caches {
			noAgentLeft(t, c)
		}
	}
}

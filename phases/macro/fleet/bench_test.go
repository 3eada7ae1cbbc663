package fleet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// BenchmarkAgents runs one closed-loop level of 2 s over N agents through
// real sshds against the emulator on loopback, and reports the streams
// kept open, the output tokens per second of all agents from the
// first send to the last end (the drain included), the busiest agent's CPU seconds
// per second, and how many agents named themselves the bottleneck.
func BenchmarkAgents(b *testing.B) {
	sshtest.Require(b)
	for _, n := range []int{2, 4} {
		for _, c := range benchLevels() {
			b.Run(fmt.Sprintf("agents=%d/C=%d", n, c), func(b *testing.B) {
				_, url := emutest.Start(b, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 0})
				ms, _ := members(b, n)
				cfg := levelConfig(url, 0)
				cfg.Duration, cfg.OutputLen, cfg.JSONL = 2*time.Second, 64, nil // histograms and counts only
				for b.Loop() {
					lv, err := RunClosed(context.Background(), cfg, c, ms)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(c), "streams")
					b.ReportMetric(float64(lv.Tokens)/lv.Span.Seconds(), "tokens/s")
					cpu := 0.0
					for _, a := range lv.Audits {
						cpu = max(cpu, a.CPUFraction)
					}
					b.ReportMetric(cpu, "max_agent_cpu")
					b.ReportMetric(float64(len(lv.Bottleneck)), "bound_agents")
					b.Logf("C=%d over %d agents: %d ok, %s", c, n, lv.OK, lv.Note())
				}
			})
		}
	}
}

// benchLevels are the concurrencies benchmarked: PROFDECK_BENCH_LEVELS
// (e.g. 256,1024), else 64 and 256.
func benchLevels() []int {
	var out []int
	for f := range strings.SplitSeq(os.Getenv("PROFDECK_BENCH_LEVELS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{64, 256}
	}
	return out
}

package macro_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// BenchmarkClient streams from an emulator in a child process (so the CPU
// counted is the client's alone) at rising chunk rates: C requests in flight
// with one chunk every 2 ms each, i.e. C/2ms chunks per second. It reports
// the client's CPU seconds per million streamed tokens, the chunk rate it
// sustained, and how far its median TPOT drifted from the emulator's 2 ms
// step (the timing stays right while the drift is under 1%). Run it with
// -benchtime=1x: one op is one whole level.
func BenchmarkClient(b *testing.B) {
	const step = 2 * time.Millisecond
	url := childEmu(b, step)
	for _, c := range []int{16, 64, 128, 256, 512} {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := macro.NewSweep(macro.Config{URL: url, Concurrency: []int{c}, Requests: 2 * c, InputLen: 8, OutputLen: 250, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				res, err := s.Run(ctx, nil)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				lv := res.Levels[0]
				if lv.Failed > 0 {
					b.Fatalf("failures %v", lv.Failures)
				}
				tokens := float64(lv.TotalOutputTokens)
				b.ReportMetric(lv.ClientCPUs/tokens*1e6, "cpu-s/Mtok")
				b.ReportMetric(tokens/lv.DurationS, "chunks/s")
				b.ReportMetric(100*(lv.MedianTPOTms-ms(step))/ms(step), "tpot-drift-%")
				b.ReportMetric(100*(lv.MedianITLms-ms(step))/ms(step), "itl-drift-%")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

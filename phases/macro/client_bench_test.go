package macro_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// BenchmarkClient streams from an emulator in a child process (so the CPU
// counted is the client's alone) at rising chunk rates: C requests in flight
// with one chunk every 2 ms each, i.e. C/2ms chunks per second. It reports
// the client's CPU seconds per million streamed tokens, the chunk rate it
// sustained, how far its mean TPOT is from the one the emulator itself
// recorded for the same requests (the client's own timing error), and how
// far its median TPOT is from the configured 2 ms step (which also moves
// when the emulator cannot keep up). Run it with -benchtime=1x: one op is
// one whole level (a round of C warm-up requests opens the connections
// first; the TPOT comparison takes them in on both sides). PROFDECK_BENCH_C overrides the levels ("16,64,256").
func BenchmarkClient(b *testing.B) {
	const step = 2 * time.Millisecond
	url := childEmu(b, step)
	levels := []int{16, 64, 128, 256, 512}
	if env := os.Getenv("PROFDECK_BENCH_C"); env != "" {
		var err error
		if levels, err = macro.ParseConcurrency(env); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range levels {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				// No pre-flight, so that the server's record holds the
				// level's requests, warm-up ones included, and the JSONL
				// gives the client's TPOT of the same requests.
				var jl bytes.Buffer
				s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{c}, Requests: 2 * c, Warmup: c, InputLen: 8, OutputLen: 250, Seed: 1,
					NoPreflight: true, JSONL: &jl}))
				if err != nil {
					b.Fatal(err)
				}
				sum0, n0 := serverTPOT(b, url)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				res, err := s.Run(ctx, nil)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				sum1, n1 := serverTPOT(b, url)
				if n1-n0 != float64(3*c) {
					b.Fatalf("the server recorded %v requests, the level sent %d", n1-n0, 3*c)
				}
				lv := res.Levels[0]
				if lv.Failed > 0 {
					b.Fatalf("failures %v", lv.Failures)
				}
				tokens := float64(lv.TotalOutputTokens)
				srv := (sum1 - sum0) / (n1 - n0) * 1e3
				b.ReportMetric(lv.ClientCPUs/tokens*1e6, "cpu-s/Mtok")
				b.ReportMetric(tokens/lv.DurationS, "chunks/s")
				b.ReportMetric(100*(meanTPOT(b, &jl)-srv)/srv, "tpot-vs-server-%")
				b.ReportMetric(100*(lv.MedianTPOTms-ms(step))/ms(step), "tpot-vs-config-%")
				bound := 0.0
				if lv.ClientBound {
					bound = 1
				}
				b.ReportMetric(bound, "client-bound")
			}
		})
	}
}

// meanTPOT is the mean TPOT of every request in a sweep's JSONL.
func meanTPOT(b *testing.B, jl *bytes.Buffer) float64 {
	var sum float64
	n := 0
	dec := json.NewDecoder(jl)
	for {
		var rec macro.Record
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		sum += rec.TPOTms
		n++
	}
	return sum / float64(n)
}

// serverTPOT reads the emulator's own per-request TPOT histogram (sum in
// seconds, count) from its /metrics.
func serverTPOT(tb testing.TB, url string) (sum, n float64) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.HasPrefix(l, "vllm:request_time_per_output_token_seconds_sum{"):
			sum = v
		case strings.HasPrefix(l, "vllm:request_time_per_output_token_seconds_count{"):
			n = v
		}
	}
	return sum, n
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

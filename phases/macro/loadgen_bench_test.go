package macro_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// The load generator's own cost. A streaming server runs in a child process
// (the emulator, its steps timed coarsely so that it does not spin on a
// core the client needs), writing one SSE event per write and per token
// with continuous usage, as vLLM's server does. The same streams are read
// twice: by the sweep client (SSE framing, JSON, timing, live counters)
// and by the floor, a reader that does nothing but read the HTTP body into
// a 64 KiB buffer. Both sides' CPU comes from getrusage of this process, so
// the server's CPU is not in it.
//
// PROFDECK_LOADGEN_URL points both at a server already running (the
// scripts/loadgen-syscalls helper starts one, so that strace counts the
// client alone); PROFDECK_LOADGEN_SIDE=sweep|floor runs one side only.

// loadOut is every request's output length in the load benchmarks.
const loadOut = 250

// loadStep is the server's step time at concurrency c: 2 ms at C=32 (16,000
// tokens/s), 10.24 ms at C=256 (25,000 tokens/s).
func loadStep(c int) time.Duration {
	return max(2*time.Millisecond, time.Duration(c)*40*time.Microsecond)
}

// usage is this process's CPU time and context switches so far.
type usage struct {
	cpu        time.Duration
	vcsw, ivcs int64
}

func getUsage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), vcsw: ru.Nvcsw, ivcs: ru.Nivcsw}
}

func (u usage) sub(v usage) usage { return usage{u.cpu - v.cpu, u.vcsw - v.vcsw, u.ivcs - v.ivcs} }

// loadRun is what one side measured over one set of streams.
type loadRun struct {
	tokens, chunks int64
	wall           time.Duration
	use            usage
	meanTPOT       float64 // ms, the client's (the sweep side only)
	srvTPOT        float64 // ms, the server's own record of the same requests
	tput           float64 // tokens/s while C were in flight (the sweep side only)
}

func (r loadRun) report(b *testing.B, side string) {
	us := r.use.cpu.Seconds() / float64(r.tokens) * 1e6
	b.ReportMetric(us, side+"-cpu-µs/tok")
	b.ReportMetric(1e6/us, side+"-tok/s/core")
	b.ReportMetric(float64(r.use.vcsw)/float64(r.chunks), side+"-vcsw/chunk")
	b.ReportMetric(float64(r.tokens)/r.wall.Seconds(), side+"-tok/s")
	b.ReportMetric(float64(r.tokens)/float64(r.chunks), side+"-tok/chunk")
	fmt.Fprintf(os.Stderr, "  %-5s %6.2f µs/token  %9.0f tok/s per core  %5.3f vol. switches/chunk  %5.3f inv./chunk  %8.0f tok/s  %.3f tok/chunk  %d chunks",
		side, us, 1e6/us, float64(r.use.vcsw)/float64(r.chunks), float64(r.use.ivcs)/float64(r.chunks),
		float64(r.tokens)/r.wall.Seconds(), float64(r.tokens)/float64(r.chunks), r.chunks)
	if r.srvTPOT > 0 {
		fmt.Fprintf(os.Stderr, "  %.0f tok/s with C in flight  TPOT %.4f ms vs server %.4f ms (%+.2f%%)", r.tput, r.meanTPOT, r.srvTPOT, 100*(r.meanTPOT-r.srvTPOT)/r.srvTPOT)
	}
	fmt.Fprintln(os.Stderr)
}

// BenchmarkLoadgen is item (a): the sweep client and the no-parse floor on
// the same streams at C=32 and C=256, one token per chunk, continuous usage
// on; figures side by side and their ratio. Run with -benchtime 1x
// (PROFDECK_BENCH_C overrides the levels).
func BenchmarkLoadgen(b *testing.B) {
	side := os.Getenv("PROFDECK_LOADGEN_SIDE")
	for _, c := range benchLevels(b, []int{32, 256}) {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
			url := loadServer(b, loadStep(c))
			for i := 0; i < b.N; i++ {
				fmt.Fprintf(os.Stderr, "C=%d, %d requests × %d tokens, step %v:\n", c, 4*c, loadOut, loadStep(c))
				var fl, sw loadRun
				if side != "sweep" {
					fl = floorRun(b, url, c, 4*c)
					fl.report(b, "floor")
				}
				if side != "floor" {
					sw = sweepRun(b, url, c, 4*c, nil)
					sw.report(b, "sweep")
				}
				if side == "" {
					r := sw.use.cpu.Seconds() / float64(sw.tokens) / (fl.use.cpu.Seconds() / float64(fl.tokens))
					b.ReportMetric(r, "sweep/floor")
					fmt.Fprintf(os.Stderr, "  sweep/floor CPU per token: %.2f×\n", r)
				}
			}
		})
	}
}

func benchLevels(b *testing.B, def []int) []int {
	if env := os.Getenv("PROFDECK_BENCH_C"); env != "" {
		l, err := macro.ParseConcurrency(env)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	return def
}

// loadServer is the benchmark's server: the one PROFDECK_LOADGEN_URL names,
// else an emulator child with coarse step timing.
func loadServer(b testing.TB, step time.Duration) string {
	if u := os.Getenv("PROFDECK_LOADGEN_URL"); u != "" {
		return strings.TrimRight(u, "/")
	}
	b.Setenv("PROFDECK_EMU_COARSE", "1")
	return childEmu(b, step)
}

// sweepRun runs one closed-loop level of n requests at concurrency c and
// measures this process around it. The server's own mean TPOT over the
// same requests comes from its /metrics (no pre-flight, no warm-up, so the
// server saw exactly the level's requests).
func sweepRun(b testing.TB, url string, c, n int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) loadRun {
	var jl bytes.Buffer
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Model: "test/model", Concurrency: []int{c}, Requests: n, InputLen: 8,
		OutputLen: loadOut, Seed: 1, NoPreflight: true, Dial: dial, JSONL: &jl}))
	if err != nil {
		b.Fatal(err)
	}
	sum0, n0 := serverTPOT(b, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	u0, t0 := getUsage(), time.Now()
	res, err := s.Run(ctx, nil)
	wall, use := time.Since(t0), getUsage().sub(u0)
	if err != nil {
		b.Fatal(err)
	}
	sum1, n1 := serverTPOT(b, url)
	lv := res.Levels[0]
	if lv.Failed > 0 || lv.Completed != n {
		b.Fatalf("%d completed, failures %v", lv.Completed, lv.Failures)
	}
	if n1-n0 != float64(n) {
		b.Fatalf("the server recorded %v requests, the client sent %d", n1-n0, n)
	}
	r := loadRun{tokens: lv.TotalOutputTokens, wall: wall, use: use, meanTPOT: lv.MeanTPOTms, tput: lv.OutputThroughput, srvTPOT: (sum1 - sum0) / (n1 - n0) * 1e3}
	dec := json.NewDecoder(&jl)
	for {
		var rec struct{ Chunks int64 }
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		r.chunks += rec.Chunks
	}
	return r
}

// floorBody is the sweep's request for the same stream.
var floorBody = fmt.Sprintf(`{"model":"test/model","prompt":"one two three four five six seven eight","max_tokens":%d,"min_tokens":%d,`+
	`"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, loadOut, loadOut)

// floorRun reads n streams, c at a time, with no SSE framing, no JSON and
// no timing: the least any client must spend to receive them. Its chunks
// are counted after the run from the bytes received.
func floorRun(b testing.TB, url string, c, n int) loadRun {
	tr := &http.Transport{MaxIdleConnsPerHost: c + 16, DisableCompression: true, ReadBufferSize: 64 << 10}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var next, events atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	u0, t0 := getUsage(), time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			var tail [2]byte // the last bytes of the previous read, for "\n\n" across reads
			for next.Add(1) <= int64(n) {
				resp, err := hc.Post(url+"/v1/completions", "application/json", strings.NewReader(floorBody))
				if err != nil {
					errs <- err
					return
				}
				var ev int64
				for {
					k, err := resp.Body.Read(buf)
					ev += countEvents(tail[:], buf[:k])
					if err != nil {
						break
					}
				}
				resp.Body.Close()
				events.Add(ev)
			}
		}()
	}
	wg.Wait()
	wall, use := time.Since(t0), getUsage().sub(u0)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	// Each stream has loadOut token events, then the final usage and [DONE]
	// in the last write with the last token.
	return loadRun{tokens: int64(n * loadOut), chunks: events.Load() - 2*int64(n), wall: wall, use: use}
}

// countEvents counts the blank lines ending events in p; tail keeps the
// last two bytes between calls. It is the floor's only look at the bytes,
// and a cheap one (bytes.Count).
func countEvents(tail, p []byte) int64 {
	if len(p) == 0 {
		return 0
	}
	n := int64(bytes.Count(p, []byte("\n\n")))
	if tail[1] == '\n' && p[0] == '\n' {
		n++
	}
	if len(p) >= 2 {
		tail[0], tail[1] = p[len(p)-2], p[len(p)-1]
	} else {
		tail[0], tail[1] = tail[1], p[0]
	}
	return n
}

// The floor's event count is right however the bytes are split across
// reads (a blank line split between two reads included).
func TestCountEvents(t *testing.T) {
	stream := []byte("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n: ping\n\ndata: [DONE]\n\n")
	for size := 1; size <= len(stream); size++ {
		var tail [2]byte
		var n int64
		for i := 0; i < len(stream); i += size {
			n += countEvents(tail[:], stream[i:min(i+size, len(stream))])
		}
		if n != 4 {
			t.Fatalf("reads of %d bytes: %d events, want 4", size, n)
		}
	}
}

// The harness itself, small: both sides read every token of every stream
// as one-token chunks, and the sweep's requests are exactly the ones the
// server recorded (sweepRun checks it).
func TestLoadgenHarness(t *testing.T) {
	url := loadServer(t, 2*time.Millisecond)
	fl := floorRun(t, url, 4, 8)
	sw := sweepRun(t, url, 4, 8, nil)
	for _, r := range []loadRun{fl, sw} {
		if r.tokens != 8*loadOut || r.chunks < r.tokens*9/10 || r.chunks > r.tokens || r.use.cpu <= 0 {
			t.Errorf("tokens %d, chunks %d, cpu %v; want %d tokens in about as many chunks", r.tokens, r.chunks, r.use.cpu, 8*loadOut)
		}
	}
	if d := (sw.meanTPOT - sw.srvTPOT) / sw.srvTPOT; d > 0.05 || d < -0.05 {
		t.Errorf("client TPOT %.4f ms, server's %.4f ms", sw.meanTPOT, sw.srvTPOT)
	}
}

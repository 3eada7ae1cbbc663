package macro

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/profdeck/profdeck/phases"
)

// runner holds what the levels of one sweep share.
type runner struct {
	s   *Sweep
	cfg Config
	c   *client
	pg  *promptGen
	em  *phases.Emitter
	t0  time.Time

	jsonlMu    sync.Mutex
	jsonlErr   error // the first failed write; later records are still tried
	jsonlWrote int   // records written before it

	promptCal string   // how prompts were sized: "tokenize" or "estimate"
	warns     warnings // the sweep's and its levels' warnings
	path      *phases.MacroPath

	srvMu      sync.Mutex
	srvSamples []phases.ServerStats // the current level's scrapes
	sctx       context.Context      // the scrapes' context (nil without a scraper)
	edges      sync.WaitGroup       // window-edge scrapes in flight
	run, runs  int                  // the level's run of its repeats (0: not repeated)
	speed      float64              // a speed search's level: the trace's speed factor (0: the sweep's)
	// openSpan is the least time a searched open-loop level sends for:
	// three times the median E2EL of the last level that met the SLO.
	openSpan time.Duration
}

// tickStats are the figures of the current second, shared with the
// request goroutines.
type tickStats struct {
	tok   atomic.Int64 // tokens this second
	total atomic.Int64 // tokens this level
	mu    sync.Mutex
	ttft  *hdrhistogram.Histogram
	tpot  *hdrhistogram.Histogram
}

func (t *tickStats) tokens(n int) { t.tok.Add(int64(n)); t.total.Add(int64(n)) }
func (t *tickStats) firstToken(d time.Duration) {
	t.mu.Lock()
	recordDur(t.ttft, d, 1)
	t.mu.Unlock()
}

// since is the offset from the sweep's start.
func (r *runner) since(t time.Time) time.Duration { return t.Sub(r.t0) }

func (r *runner) writeJSONL(rec *Record) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(rec)
	}
	if r.cfg.JSONL == nil {
		return
	}
	if r.cfg.Gaps {
		rec.fillGaps()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	b = append(b, '\n')
	r.jsonlMu.Lock()
	defer r.jsonlMu.Unlock()
	_, err = r.cfg.JSONL.Write(b)
	if f, ok := r.cfg.JSONL.(interface{ Flush() error }); ok && err == nil {
		err = f.Flush()
	}
	switch {
	case err != nil && r.jsonlErr == nil:
		r.jsonlErr = err
	case err == nil && r.jsonlErr == nil:
		r.jsonlWrote++
	}
}

// jsonlNote is the result's note when a per-request record could not be
// written, so that an incomplete JSONL file is not taken for a whole one.
func (r *runner) jsonlNote() string {
	r.jsonlMu.Lock()
	defer r.jsonlMu.Unlock()
	if r.jsonlErr == nil {
		return ""
	}
	return fmt.Sprintf("writing the per-request records failed after %d of them (%v): the JSONL file is incomplete", r.jsonlWrote, r.jsonlErr)
}

// runLevel runs one level: closed loop at concurrency conc, or open loop at
// rate req/s when rate > 0. It returns the level's result; the error is
// ctx's when the sweep was cancelled.
func (r *runner) runLevel(ctx context.Context, conc int, rate float64) (*phases.LevelResult, error) {
	if rate == 0 {
		r.c.conns.fill(ctx, conc)
	}
	l := r.startLevel(ctx, conc, rate)
	defer l.cancel()
	l.dispatch(ctx)
	lr := l.result(ctx)
	if l.cancelled != nil && lr.Completed+lr.Failed == 0 {
		return nil, l.cancelled
	}
	return lr, l.cancelled
}

// finish takes one ended request: JSONL line, level aggregate, live stats.
func (r *runner) finish(rec *Record, agg *levelAgg, ttfb, ttfat *hdrhistogram.Histogram, ts *tickStats) {
	r.writeJSONL(rec)
	if rec.Completed() && rec.OutputTokens > 1 {
		ts.mu.Lock()
		recordDur(ts.tpot, rec.tpot, 1)
		ts.mu.Unlock()
	}
	agg.span(rec)
	if rec.Warmup {
		return
	}
	agg.add(rec)
	if rec.Completed() {
		recordDur(ttfb, time.Duration(rec.TTFBms*1e6), 1)
		if rec.TTFATms > 0 {
			recordDur(ttfat, time.Duration(rec.TTFATms*1e6), 1)
		}
	}
}

func (r *runner) emitTick(ctx context.Context, cfg Config, rate float64, inFlight int, agg *levelAgg, ts *tickStats,
	start, measuredStart time.Time, measuredDone int, paused bool) phases.MacroTick {
	t := phases.MacroTick{Concurrency: r.s.Concurrency(), InFlight: inFlight, Completed: agg.completed,
		Failed: agg.failed, LevelElapsedS: time.Since(start).Seconds(), Paused: paused}
	if rate > 0 {
		t.Concurrency = 0
	}
	t.OutputTokS = float64(ts.tok.Swap(0))
	ts.mu.Lock()
	if ts.tpot.TotalCount() > 0 {
		t.TPOTp50ms = float64(ts.tpot.ValueAtQuantile(50)) / 1e3
		t.TPOTp99ms = float64(ts.tpot.ValueAtQuantile(99)) / 1e3
	}
	if ts.ttft.TotalCount() > 0 {
		t.TTFTp50ms = float64(ts.ttft.ValueAtQuantile(50)) / 1e3
	}
	ts.tpot.Reset()
	ts.ttft.Reset()
	ts.mu.Unlock()
	switch {
	case cfg.Duration > 0 && !measuredStart.IsZero():
		t.LevelProgress = math.Min(1, time.Since(measuredStart).Seconds()/cfg.Duration.Seconds())
		if cfg.Requests > 0 {
			t.LevelProgress = math.Max(t.LevelProgress, float64(measuredDone)/float64(cfg.Requests))
		}
	case cfg.Requests > 0:
		t.LevelProgress = math.Min(1, float64(measuredDone)/float64(cfg.Requests))
	}
	r.em.Emit(ctx, phases.KindMacroTick, &t)
	return t
}

// serverNow is the server's running and waiting requests from the latest
// scrape when it is recent (zeros otherwise), as the charts pair them
// with a tick.
func (r *runner) serverNow(now time.Time) (running, waiting float64) {
	r.srvMu.Lock()
	defer r.srvMu.Unlock()
	if n := len(r.srvSamples); n > 0 {
		if st := r.srvSamples[n-1]; st.Available && now.Sub(st.At) < 3*time.Second {
			return st.Running, st.Waiting
		}
	}
	return 0, 0
}

// audit fills the client self-audit: is the client what limited the level?
// Closed loop: it did not keep C in flight (a refill p99 later than 10 ms and
// than 5% of the median request, or a mean in flight under 95% of C);
// open loop: requests left more than 10 ms (p99) after their scheduled
// time. Either: the client used over 90% of its cores.
func (r *runner) audit(lr *phases.LevelResult, rate float64, wall time.Duration, steady bool) {
	lag := time.Duration(lr.P99SendLagms * 1e6)
	cores := float64(runtime.GOMAXPROCS(0))
	var why []string
	switch {
	case rate > 0 && lag > r.cfg.ClientBoundLag && r.cfg.MaxInFlight == 0: // under a cap, a late send waited for it
		why = append(why, fmt.Sprintf("p99 send lag %.1f ms is over %.0f ms: requests left later than scheduled",
			lr.P99SendLagms, ms(r.cfg.ClientBoundLag)))
	case rate == 0 && lag > r.cfg.ClientBoundLag && lr.P99SendLagms > 0.05*lr.MedianE2ELms:
		why = append(why, fmt.Sprintf("p99 send lag %.1f ms (over %.0f ms and 5%% of the median request): freed slots were refilled late",
			lr.P99SendLagms, ms(r.cfg.ClientBoundLag)))
	}
	if rate == 0 && steady && lr.Concurrency > 0 && lr.DurationS > 0 && lr.MeanInFlight < 0.95*float64(lr.Concurrency) {
		why = append(why, fmt.Sprintf("%.1f requests in flight on average, not %d", lr.MeanInFlight, lr.Concurrency))
	}
	if wall > 0 && lr.ClientCPUs/wall.Seconds() > 0.9*cores {
		why = append(why, fmt.Sprintf("client used %.0f%% of %d cores", 100*lr.ClientCPUs/wall.Seconds(), int(cores)))
	}
	if len(why) > 0 {
		lr.ClientBound = true
		lr.ClientBoundReason = strings.Join(why, "; ")
	}
}

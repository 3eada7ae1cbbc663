package macro

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
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

	srvMu      sync.Mutex
	srvSamples []phases.ServerStats // the current level's scrapes
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
	if r.cfg.JSONL == nil {
		return
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
	cfg := r.cfg
	// C requests cannot stay in flight with fewer than C to send: a level
	// gets at least two rounds of measured requests.
	var notes []string
	if rate == 0 && cfg.Requests > 0 && cfg.Requests < 2*conc {
		notes = append(notes, fmt.Sprintf("measured requests raised from %d to %d so that %d stay in flight", cfg.Requests, 2*conc, conc))
		cfg.Requests = 2 * conc
	}
	s := r.s
	s.mu.Lock()
	s.target = conc
	s.mu.Unlock()
	r.srvMu.Lock()
	r.srvSamples = r.srvSamples[:0]
	r.srvMu.Unlock()

	r.em.Emit(ctx, phases.KindMacroLevelGo, &phases.LevelStarted{Concurrency: conc, Rate: rate,
		Requests: cfg.Requests, DurationS: cfg.Duration.Seconds()})

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agg := newLevelAgg()
	ttfb, ttfat := newHist(), newHist()
	ts := &tickStats{ttft: newHist(), tpot: newHist()}
	done := make(chan *Record, 256)
	cpu0 := cpuTime()
	start := time.Now()

	var (
		sent, inFlight, measuredDone int
		measuredStart                time.Time
		deadline                     <-chan time.Time
		sendingOver                  bool
		inflightArea                 float64 // ∫ in-flight dt over the measured window
		lastChange                   = start
		pausedSince                  time.Time
		pausedTotal                  time.Duration
		lastTarget                   = conc
		nextArrival                  = start
		rng                          = rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(conc)+uint64(rate*1000)))
		arrivalTimer                 *time.Timer
		tickNext                     = start.Add(time.Second)
		// The throughput window of a closed-loop level: from the first
		// measured send until the in-flight count first drops below the
		// target once sending is over, so the tail, where fewer than C
		// run, does not dilute it.
		tok0, tokEnd int64
		winEnd       time.Time
		winArea      float64
		freed        []time.Time // when the slots not yet refilled freed
		steady       = true      // no pause and no live concurrency change
	)
	accountInFlight := func(now time.Time) {
		if !measuredStart.IsZero() {
			from := lastChange
			if from.Before(measuredStart) {
				from = measuredStart
			}
			if now.After(from) {
				inflightArea += float64(inFlight) * now.Sub(from).Seconds()
			}
		}
		lastChange = now
	}
	maxSends := -1
	if cfg.Requests > 0 {
		maxSends = cfg.Warmup + cfg.Requests
	}
	launch := func(scheduled time.Time) {
		idx := sent
		sent++
		warm := idx < cfg.Warmup
		prompt := r.pg.make(cfg.InputLen)
		now := time.Now()
		accountInFlight(now)
		inFlight++
		if !warm && measuredStart.IsZero() {
			measuredStart = now
			lastChange = now
			tok0 = ts.total.Load()
			agg.start(r.since(now))
			if cfg.Duration > 0 {
				deadline = time.After(cfg.Duration)
			}
		}
		go func() {
			rec := &Record{Concurrency: conc, Rate: rate, Index: idx, Warmup: warm, InputTokens: cfg.InputLen}
			at := time.Now()
			rec.sendLag = at.Sub(scheduled)
			if rec.sendLag < 0 {
				rec.sendLag = 0
			}
			rec.ScheduledS = r.since(scheduled).Seconds()
			rec.SentS = r.since(at).Seconds()
			rec.SendLagMs = ms(rec.sendLag)
			r.c.send(lctx, rec, prompt, ts)
			rec.endAt = time.Now()
			rec.end = r.since(rec.endAt)
			done <- rec
		}()
	}
	if rate > 0 {
		arrivalTimer = time.NewTimer(0)
		defer arrivalTimer.Stop()
	}
	tick := time.NewTimer(time.Until(tickNext))
	defer tick.Stop()
	var cancelled error

	for {
		paused, stopping, target := s.state()
		now := time.Now()
		if paused && pausedSince.IsZero() {
			pausedSince = now
			steady = false
		} else if !paused && !pausedSince.IsZero() {
			pausedTotal += now.Sub(pausedSince)
			pausedSince = time.Time{}
			if rate > 0 {
				nextArrival = now // arrivals missed while paused are not made up
				arrivalTimer.Reset(0)
			}
		}
		if target != lastTarget && rate == 0 {
			notes = append(notes, fmt.Sprintf("concurrency changed live from %d to %d at %.1fs", lastTarget, target, now.Sub(start).Seconds()))
			lastTarget = target
			steady = false
		}
		if stopping || cancelled != nil || (maxSends >= 0 && sent >= maxSends) {
			sendingOver = true
		}
		if !sendingOver && !paused && rate == 0 {
			for inFlight < target && (maxSends < 0 || sent < maxSends) {
				// A refill is due when its slot freed (the request's end),
				// so time the dispatcher took counts as send lag.
				due := now
				if len(freed) > 0 {
					due, freed = freed[0], freed[1:]
				}
				launch(due)
			}
		}
		freed = freed[:0] // slots not refilled now (paused, lowered) are not owed
		if sendingOver && inFlight == 0 {
			break
		}
		var arrivals <-chan time.Time
		if rate > 0 && !sendingOver && !paused {
			arrivals = arrivalTimer.C
		}
		select {
		case rec := <-done:
			now := time.Now()
			accountInFlight(now)
			inFlight--
			if rate == 0 {
				freed = append(freed, rec.endAt)
			}
			if winEnd.IsZero() && !measuredStart.IsZero() {
				if sendingOver && rec.Failure != FailCancelled {
					winEnd, tokEnd, winArea = now, ts.total.Load(), inflightArea
				}
			}
			r.finish(rec, agg, ttfb, ttfat, ts)
			if !rec.Warmup {
				measuredDone++
			}
			// A freed slot is refilled at once: the next request's send lag
			// is measured from now.
		case <-arrivals:
			launch(nextArrival)
			nextArrival = nextArrival.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
			arrivalTimer.Reset(time.Until(nextArrival))
		case <-deadline:
			sendingOver = true
			deadline = nil
		case <-s.wake:
		case <-tick.C:
			r.emitTick(ctx, cfg, rate, inFlight, agg, ts, start, measuredStart, measuredDone, paused)
			tickNext = tickNext.Add(time.Second)
			tick.Reset(time.Until(tickNext))
		case <-ctx.Done():
			if cancelled == nil {
				cancelled = ctx.Err()
				cancel()
			}
		}
	}
	accountInFlight(time.Now())
	cpu := cpuTime() - cpu0
	if !pausedSince.IsZero() {
		pausedTotal += time.Since(pausedSince)
	}

	lr := agg.result(lastTarget, rate)
	if rate > 0 {
		lr.Concurrency = 0
	}
	lr.MedianTTFBms = float64(ttfb.ValueAtQuantile(50)) / 1e3
	lr.MedianTTFATms = float64(ttfat.ValueAtQuantile(50)) / 1e3
	lr.ClientCPUs = cpu.Seconds()
	lr.ThroughputWindow = "measured"
	if rate == 0 && !winEnd.IsZero() && winEnd.After(measuredStart) {
		// Closed loop: throughput while C were in flight (every token
		// received in that window, warm-up requests' included, as they
		// held slots too).
		w := winEnd.Sub(measuredStart).Seconds()
		lr.ThroughputWindow = "in_flight"
		lr.DurationS = w
		lr.OutputThroughput = float64(tokEnd-tok0) / w
		// Completions come in bursts when requests run in step, so the
		// request rate is the token rate over the mean output length.
		lr.RequestThroughput = 0
		if lr.TotalOutputTokens > 0 {
			lr.RequestThroughput = lr.OutputThroughput * float64(lr.Completed) / float64(lr.TotalOutputTokens)
		}
		inflightArea = winArea
	}
	if lr.DurationS > 0 {
		lr.MeanInFlight = inflightArea / lr.DurationS
	}
	if pausedTotal > 0 {
		notes = append(notes, fmt.Sprintf("paused for %.1fs during the level; throughput includes the pause", pausedTotal.Seconds()))
	}
	if stopping := func() bool { _, st, _ := s.state(); return st }(); stopping {
		notes = append(notes, "stopped early by the operator")
	}
	if cancelled != nil {
		notes = append(notes, "cancelled: in-flight requests were cut and are not counted")
	}
	lr.Notes = notes
	r.audit(&lr, rate, time.Since(start), steady)
	lr.Server = r.serverLevel(ctx)
	if cancelled != nil && lr.Completed+lr.Failed == 0 {
		return nil, cancelled
	}
	return &lr, cancelled
}

// finish takes one ended request: JSONL line, level aggregate, live stats.
func (r *runner) finish(rec *Record, agg *levelAgg, ttfb, ttfat *hdrhistogram.Histogram, ts *tickStats) {
	r.writeJSONL(rec)
	if rec.Completed() && rec.OutputTokens > 1 {
		ts.mu.Lock()
		recordDur(ts.tpot, rec.tpot, 1)
		ts.mu.Unlock()
	}
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
	start, measuredStart time.Time, measuredDone int, paused bool) {
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
	case rate > 0 && lag > r.cfg.ClientBoundLag:
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

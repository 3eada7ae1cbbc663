package macro

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// This file puts a trace into a sweep: one open-loop level whose arrivals
// are the trace's window (at its speed) and whose prompts are made from
// its hash ids.

// traceFeed hands out a trace window's prompts and the gaps between its
// requests, in order; a level restarts it.
type traceFeed struct {
	mu      sync.Mutex
	trace   *Trace
	window  TraceWindow
	reqs    []TraceRequest
	prompts *tracePrompts
	sent    int     // prompts handed out
	gaps    int     // gaps handed out
	scale   float64 // the level's gaps over the window's (the window's speed over the level's)
	rate1   float64 // the window's mean rate at speed 1
}

// traceLevel reads a trace dataset, cuts its window and makes the sweep
// one open-loop level at the window's mean rate, sending its requests.
func (cfg *Config) traceLevel() error {
	if !IsTraceFormat(cfg.Dataset) || cfg.trace != nil {
		return nil
	}
	if cfg.Search != "" && cfg.Search != phases.SearchSpeed {
		return fmt.Errorf("--search %s: a trace replays on its own schedule; --search speed finds the fastest replay meeting the SLO", cfg.Search)
	}
	if cfg.DatasetFile == "" {
		return fmt.Errorf("--dataset %s: a FILE is required", cfg.Dataset)
	}
	if math.IsNaN(cfg.TraceSpeed) || cfg.TraceSpeed < 0 || cfg.TraceSpeed > 1e4 {
		return fmt.Errorf("TraceSpeed %g: want more than 0 and at most 10000", cfg.TraceSpeed)
	}
	if cfg.TraceStart < 0 || cfg.TraceDuration < 0 {
		return fmt.Errorf("TraceStart %v, TraceDuration %v: want 0 or more", cfg.TraceStart, cfg.TraceDuration)
	}
	tr, err := ReadTrace(cfg.Dataset, cfg.DatasetFile)
	if err != nil {
		return err
	}
	w := TraceWindow{Start: cfg.TraceStart, Dur: cfg.TraceDuration, Speed: cfg.TraceSpeed}
	reqs := w.Cut(tr.Requests)
	sum := tr.Summarize(w, reqs)
	if sum.Requests < 2 || sum.MeanRate <= 0 {
		return fmt.Errorf("--dataset %s %s: the window holds %d requests over %.3gs; a replay needs two or more apart in time", cfg.Dataset, cfg.DatasetFile, sum.Requests, sum.SpanSeconds)
	}
	block := max(tr.BlockSize, 1)
	cfg.trace = &traceFeed{trace: tr, window: w, reqs: reqs, prompts: newTracePrompts(block, uint64(cfg.Seed)), scale: 1,
		rate1: sum.MeanRate / sum.Speed}
	cfg.Rate, cfg.Concurrency = cfg.trace.rateAt(sum.Speed), nil
	cfg.Requests, cfg.Warmup, cfg.Duration = len(reqs), 0, 0
	if cfg.Shards > 1 { // this agent's rows: Shard, Shard+Shards, …
		cfg.Requests = (len(reqs) - cfg.Shard + cfg.Shards - 1) / cfg.Shards
	}
	return nil
}

// restart hands the window out again from its first request, at speed
// (0: the window's own) (nil-safe).
func (f *traceFeed) restart(speed float64) *traceFeed {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	f.sent, f.gaps, f.scale = 0, 0, 1
	if w := f.windowSpeed(); speed > 0 {
		f.scale = w / speed
	}
	f.mu.Unlock()
	return f
}

// windowSpeed is the speed the window was cut at (1 when not given).
func (f *traceFeed) windowSpeed() float64 {
	if f.window.Speed <= 0 {
		return 1
	}
	return f.window.Speed
}

// rateAt is the level's rate when the window replays at speed: its mean
// rate, to four digits (the gaps are the trace's; the rate names the level).
func (f *traceFeed) rateAt(speed float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f.rate1*speed, 'g', 4, 64), 64)
	return r
}

// minReplaySpan is the shortest replay a speed search's ladder climbs to:
// faster, the window is one burst (a longer window says more).
const minReplaySpan = time.Second

// speedLadder is a speed search's climb: the window's speed, doubling,
// up to rungs levels while the rate stays within MaxRate and the window
// replays in minReplaySpan or more (the first rung whatever its span).
func (f *traceFeed) speedLadder(rungs int) []float64 {
	at1 := float64(f.reqs[len(f.reqs)-1].At) * f.windowSpeed() // the window's span as recorded
	var out []float64
	for s := f.windowSpeed(); len(out) < rungs && f.rate1*s <= MaxRate; s *= 2 {
		if len(out) > 0 && at1/s < float64(minReplaySpan) {
			break
		}
		out = append(out, s)
	}
	return out
}

// levelSpeed is the speed a level replays the trace at: the speed
// search's level, else the sweep's (0 without a trace).
func (r *runner) levelSpeed() float64 {
	if r.cfg.trace == nil {
		return 0
	}
	if r.speed > 0 {
		return r.speed
	}
	return r.cfg.trace.windowSpeed()
}

// next is the next request's prompt, input and output lengths, with
// tokensPerWord as /tokenize measured it.
func (f *traceFeed) next(tokensPerWord float64) (string, int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tokensPerWord > 0 {
		f.prompts.tokensPerWrd = tokensPerWord
	}
	i := f.sent % len(f.reqs)
	f.sent++
	r := f.reqs[i]
	return f.prompts.prompt(i, r), r.InputLen, r.OutputLen
}

// gap is the time from one request of the window to the next.
func (f *traceFeed) gap() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.gaps % len(f.reqs)
	f.gaps++
	if i+1 >= len(f.reqs) {
		return time.Hour // past the window's last request: nothing more is due
	}
	return time.Duration(float64(f.reqs[i+1].At-f.reqs[i].At) * f.scale)
}

// TraceSummary is the replayed window's summary (nil without a trace).
func (cfg Config) TraceSummary() *TraceSummary {
	if cfg.trace == nil {
		return nil
	}
	s := cfg.trace.trace.Summarize(cfg.trace.window, cfg.trace.reqs)
	return &s
}

// arrivalsName is the arrival process a level's schedule names: the
// trace's format when replaying one.
func (cfg Config) arrivalsName() string {
	if cfg.trace != nil {
		return cfg.Dataset + " trace"
	}
	return cfg.Arrivals
}

// tokenCheckShare is how far the server's count of the trace's prompts may
// be from the trace's lengths before the sweep warns.
const tokenCheckShare = 0.05

// checkTokens counts a few of the window's prompts (its first, last and
// two between) with the server's /tokenize when it has one: the prompts
// are sized by the calibration's tokens per word, and a tokenizer that
// counts them otherwise than the trace's lengths (past tokenCheckShare)
// is said, as a warning (the replay's lengths, and where its blocks meet,
// are off by as much). Nil-safe; "" when the counts agree or cannot be
// had.
func (f *traceFeed) checkTokens(ctx context.Context, c *client, tokensPerWord float64) string {
	if f == nil || !c.canTokenize.Load() {
		return ""
	}
	gen := newTracePrompts(f.prompts.block, f.prompts.seed)
	gen.tokensPerWrd = tokensPerWord
	n := len(f.reqs)
	var want, got int
	picked := map[int]bool{}
	for _, i := range []int{0, n / 3, 2 * n / 3, n - 1} {
		if picked[i] {
			continue
		}
		picked[i] = true
		count, ok := c.tokenCount(ctx, gen.prompt(i, f.reqs[i]), true)
		if !ok {
			return ""
		}
		want, got = want+f.reqs[i].InputLen, got+count
	}
	off := float64(got)/float64(want) - 1
	c.logf("the trace's prompts checked with /tokenize: %d of them, %d tokens counted for the trace's %d (%+.1f%%)", len(picked), got, want, 100*off)
	if math.Abs(off) <= tokenCheckShare {
		return ""
	}
	return fmt.Sprintf("the server's /tokenize counts %d of the trace's prompts at %d tokens where the trace says %d (%+.0f%%): "+
		"the replayed prompts' lengths, and where their shared blocks end, are off by as much (the prompts are sized by the calibration's %.3f tokens per word)",
		len(picked), got, want, 100*off, tokensPerWord)
}

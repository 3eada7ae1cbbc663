package macro

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
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
	sent    int // prompts handed out
	gaps    int // gaps handed out
}

// traceLevel reads a trace dataset, cuts its window and makes the sweep
// one open-loop level at the window's mean rate, sending its requests.
func (cfg *Config) traceLevel() error {
	if !IsTraceFormat(cfg.Dataset) || cfg.trace != nil {
		return nil
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
	cfg.trace = &traceFeed{trace: tr, window: w, reqs: reqs, prompts: newTracePrompts(block, uint64(cfg.Seed))}
	rate, _ := strconv.ParseFloat(strconv.FormatFloat(sum.MeanRate, 'g', 4, 64), 64) // the gaps are the trace's; the rate names the level
	cfg.Rate, cfg.Concurrency, cfg.Search = rate, nil, ""
	cfg.Requests, cfg.Warmup, cfg.Duration = len(reqs), 0, 0
	return nil
}

// restart hands the window out again from its first request (nil-safe).
func (f *traceFeed) restart() *traceFeed {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	f.sent, f.gaps = 0, 0
	f.mu.Unlock()
	return f
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
	return f.reqs[i+1].At - f.reqs[i].At
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

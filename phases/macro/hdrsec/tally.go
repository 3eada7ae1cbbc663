package hdrsec

import (
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// Batch is what an agent measured since its last batch: the histograms of
// the requests that finished, by metric and second sent, and their counts.
// Batches add up: the coordinator merges them all.
type Batch struct {
	Seconds []Second `json:"seconds,omitempty"`
	OK      int64    `json:"ok,omitempty"`
	Failed  int64    `json:"failed,omitempty"`
	Tokens  int64    `json:"tokens,omitempty"`
	// InWindow are the measured requests sent within the level's duration
	// (all of them: such a level stops sending when it ends).
	InWindow int64 `json:"in_window,omitempty"`
	// First and Last are the first send and the last end among the
	// batch's finished requests, in seconds since the agent's start.
	First float64 `json:"first_s,omitempty"`
	Last  float64 `json:"last_s,omitempty"`
}

// Tally takes an agent's finished requests (Take is the sweep's
// Config.Observe) and keeps them as a Batch until Flush.
type Tally struct {
	mu     sync.Mutex
	rec    *Recorder
	b      Batch
	any    bool
	window float64
}

// NewTally returns an empty tally for a level of window seconds (0: a
// level of a number of requests).
func NewTally(window float64) *Tally { return &Tally{rec: NewRecorder(), window: window} }

// Take takes one finished request's record (a warm-up one is left out).
func (t *Tally) Take(r *macro.Record) {
	if r.Warmup {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.any = true
	if t.window > 0 {
		t.b.InWindow++ // a level of a duration sends only within it
	}
	sec := int64(r.SentS)
	t.rec.Record(Lag, sec, us(r.SendLagMs)) // every measured send, as the level's send lag
	if r.Failure != "" {
		if r.Failure != macro.FailCancelled {
			t.b.Failed++
		}
		return
	}
	if t.b.OK == 0 || r.SentS < t.b.First {
		t.b.First = r.SentS
	}
	t.b.Last = max(t.b.Last, r.SentS+r.E2ELms/1e3)
	t.b.OK++
	t.b.Tokens += int64(r.OutputTokens)
	Add(t.rec, r)
}

// The metrics an agent sends, by the names its histograms carry: those
// of every percentile a level reports.
const (
	TTFT     = "ttft"
	TPOT     = "tpot"
	ITL      = "itl"       // per token, as the level's ITL
	ITLChunk = "itl_chunk" // per gap between chunks with choices
	E2EL     = "e2el"
	TTFB     = "ttfb"
	TTFAT    = "ttfat"
	Lag      = "send_lag"
)

func us(ms float64) int64 { return int64(ms*1e3 + 0.5) }

// Add records a completed request's measurements in microseconds, in the
// histograms of the second it was sent, as a single client's level takes
// them: TPOT of more than one token, ITL once per token, TTFAT when the
// request had one.
func Add(rec *Recorder, r *macro.Record) {
	sec := int64(r.SentS)
	rec.Record(TTFT, sec, us(r.TTFTms))
	rec.Record(E2EL, sec, us(r.E2ELms))
	rec.Record(TTFB, sec, us(r.TTFBms))
	if r.OutputTokens > 1 {
		rec.Record(TPOT, sec, us(r.TPOTms))
	}
	if r.TTFATms > 0 {
		rec.Record(TTFAT, sec, us(r.TTFATms))
	}
	r.EachGap(func(d time.Duration, n int) { rec.RecordN(ITL, sec, int64(d/time.Microsecond), int64(n)) },
		func(d time.Duration) { rec.Record(ITLChunk, sec, int64(d/time.Microsecond)) })
}

// Flush returns what was taken since the last flush and starts again;
// false when nothing was.
func (t *Tally) Flush() (Batch, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.any {
		return Batch{}, false, nil
	}
	secs, err := t.rec.Seconds()
	if err != nil {
		return Batch{}, false, err
	}
	b := t.b
	b.Seconds = secs
	t.b, t.rec, t.any = Batch{}, NewRecorder(), false
	return b, true, nil
}

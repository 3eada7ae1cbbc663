package hdrsec

import (
	"bytes"
	"encoding/json"
	"sync"

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

// Tally takes an agent's per-request records (it is the sweep's JSONL
// writer) and keeps them as a Batch until Flush.
type Tally struct {
	mu     sync.Mutex
	buf    []byte
	rec    *Recorder
	b      Batch
	any    bool
	window float64
}

// NewTally returns an empty tally for a level of window seconds (0: a
// level of a number of requests).
func NewTally(window float64) *Tally { return &Tally{rec: NewRecorder(), window: window} }

// Write takes JSONL records, one a line.
func (t *Tally) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		t.take(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
}

func (t *Tally) take(line []byte) {
	var r macro.Record
	if json.Unmarshal(line, &r) != nil || r.Warmup {
		return
	}
	t.any = true
	if t.window > 0 {
		t.b.InWindow++ // a level of a duration sends only within it
	}
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

// Add records a finished request's TTFT, TPOT and E2EL in microseconds,
// in the histograms of the second it was sent.
func Add(rec *Recorder, r macro.Record) {
	sec := int64(r.SentS)
	for _, m := range []struct {
		name string
		ms   float64
	}{{"ttft", r.TTFTms}, {"tpot", r.TPOTms}, {"e2el", r.E2ELms}} {
		if m.ms > 0 {
			rec.Record(m.name, sec, int64(m.ms*1e3+0.5))
		}
	}
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

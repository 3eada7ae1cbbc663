package macro

import (
	"math"
	"testing"
	"time"
)

// Four requests arrive together and are prefilled one after another: the
// first finds none decoding, the last three. A fifth arrives once they all
// decode and finds four. Warm-up requests decode too: they are counted.
func TestPrefillWait(t *testing.T) {
	a := newLevelAgg()
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	add := func(sentMs, ttftMs, endMs float64, warm bool) {
		r := &Record{SentS: sentMs / 1000, InputTokens: 100, OutputTokens: 11, Warmup: warm}
		r.ttft, r.tpot, r.end = ms(ttftMs), ms(10), ms(endMs)
		a.span(r)
	}
	for i := 0; i < 4; i++ {
		add(0, 10*float64(i+1), 1000, i == 0)
	}
	add(500, 10, 1200, false)
	// A failed request is no span.
	a.span(&Record{Failure: "http", InputTokens: 100})
	w := a.prefillWait()
	if w == nil {
		t.Fatal("no prefill wait")
	}
	// Prompt tokens × decoding: 100 × (0+1+2+3+4) = 1000 over 500 prompt
	// tokens and 5 × 10 decoded tokens.
	if w.Requests != 5 || math.Abs(w.DecodeBatch-2) > 1e-9 || math.Abs(w.PromptTokensPerToken-20) > 1e-9 {
		t.Fatalf("got %+v, want 5 requests, decode batch 2, 20 prompt tokens per output token", *w)
	}
	// A request ending in the same step as another's prefill waited for it.
	b := newLevelAgg()
	r1 := &Record{InputTokens: 100, OutputTokens: 11}
	r1.ttft, r1.tpot, r1.end = ms(10), ms(10), ms(300)
	r2 := &Record{SentS: 0.29, InputTokens: 100, OutputTokens: 11}
	r2.ttft, r2.tpot, r2.end = ms(10), ms(10), ms(500)
	b.span(r1)
	b.span(r2)
	if w := b.prefillWait(); w == nil || math.Abs(w.DecodeBatch-0.5) > 1e-9 {
		t.Fatalf("got %+v, want decode batch 0.5 (the second prompt found the first decoding)", w)
	}
}

// A request decodes every 10 ms; another's prompt is prefilled between two
// of its steps (first token at 62 ms), so that gap takes 20 ms: 10 ms of
// stall over the two requests' 12 output tokens after the first.
func TestPrefillStalls(t *testing.T) {
	a := newLevelAgg()
	spanOfGaps(a, 0, 10, 10, 10, 10, 10, 20, 10, 10, 10)
	spanOfGaps(a, 50, 12, 8, 10, 10, 10)
	w := a.prefillWait()
	if w == nil || w.Measured != 2 || math.Abs(w.CleanShare-11.0/12) > 1e-9 || math.Abs(w.StallMsPerToken-10.0/12) > 1e-6 || math.Abs(w.CleanGapMs-10) > 1e-6 {
		t.Fatalf("got %+v, want 2 requests, %.4f ms of stall per token, clean gap 10 ms", w, 10.0/12)
	}
}

// A request's clean gap is the median of its own gaps that held no first
// token, whatever their order: here its one stalled gap (30 ms, which held
// the other request's first token) is its first and its longest, and the
// clean ones are 10, 10 and 12 ms: clean gap 10 ms, a stall of 20 ms.
func TestPrefillStallsCleanGapOfItsOwnGaps(t *testing.T) {
	a := newLevelAgg()
	spanOfGaps(a, 0, 10, 30, 10, 10, 12)
	spanOfGaps(a, 20, 5, 10, 10)
	w := a.prefillWait()
	if w == nil || w.Measured != 2 || math.Abs(w.StallMsPerToken-20.0/6) > 1e-6 || math.Abs(w.CleanGapMs-10) > 1e-6 {
		t.Fatalf("got %+v, want %.4f ms of stall per token, clean gap 10 ms", w, 20.0/6)
	}
}

// spanOfGaps adds to a one request sent at sentMs, its first token ttftMs
// later and each next token the given gap (ms) after the one before.
func spanOfGaps(a *levelAgg, sentMs, ttftMs float64, gaps ...float64) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	r := &Record{SentS: sentMs / 1000, InputTokens: 100, OutputTokens: len(gaps) + 1}
	r.ttft, r.tpot = ms(ttftMs), ms(10)
	end := sentMs + ttftMs
	for _, g := range gaps {
		r.itl = append(r.itl, itlSample{perToken: ms(g), tokens: 1})
		end += g
	}
	r.end = ms(end)
	a.span(r)
}

package macro

import (
	"slices"
	"sort"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// decodeSpan is one completed request of a level, warm-up ones included:
// when its first token came and when it ended (since the sweep's start),
// its prompt and output tokens, and half its time per output token.
type decodeSpan struct {
	first, end time.Duration
	half       time.Duration
	in, out    int
	measured   bool
	// at are the times its chunks of tokens came (since the sweep's
	// start, the first token's first), n how many tokens each held.
	at []time.Duration
	n  []int32
}

// maxSpans bounds the requests a level keeps for its prefill wait, and
// maxChunks their token chunks (12 bytes each); a longer level reports no
// prefill wait.
const (
	maxSpans  = 1 << 18
	maxChunks = 1 << 22
)

// span keeps r for the level's prefill wait.
func (a *levelAgg) span(r *Record) {
	if !r.Completed() || r.ttft <= 0 || r.end <= 0 {
		return
	}
	if len(a.spans) >= maxSpans {
		a.spansCut = true
		return
	}
	half := r.tpot / 2
	if half <= 0 {
		half = time.Millisecond
	}
	sent := time.Duration(r.SentS * float64(time.Second))
	sp := decodeSpan{first: sent + r.ttft, end: r.end, half: half, in: r.InputTokens, out: r.OutputTokens, measured: !r.Warmup}
	if a.chunks+len(r.itl)+1 <= maxChunks {
		t := sp.first
		sp.at, sp.n = make([]time.Duration, 1, len(r.itl)+1), make([]int32, 1, len(r.itl)+1)
		sp.at[0], sp.n[0] = t, 1
		for _, s := range r.itl {
			t += s.perToken * time.Duration(s.tokens)
			sp.at = append(sp.at, t)
			sp.n = append(sp.n, int32(s.tokens))
		}
		a.chunks += len(sp.at)
	} else {
		a.chunksCut = true
	}
	a.spans = append(a.spans, sp)
}

// prefillWait is what the level's running requests waited for others'
// prompts: each prompt is prefilled just before its first token (whole, or
// its last chunk), while the requests that had their first token at least
// half a step earlier and had not ended yet were decoding. Its tokens
// count once for each of those requests. nil without prompt tokens.
func (a *levelAgg) prefillWait() *phases.PrefillWait {
	if a.spansCut || len(a.spans) == 0 {
		return nil
	}
	firsts := make([]time.Duration, len(a.spans))
	ends := make([]time.Duration, len(a.spans))
	for i, s := range a.spans {
		firsts[i], ends[i] = s.first, s.end
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	var waited, prompt, decoded float64
	for _, s := range a.spans {
		at := s.first - s.half
		begun := sort.Search(len(firsts), func(i int) bool { return firsts[i] >= at })
		ended := sort.Search(len(ends), func(i int) bool { return ends[i] > at })
		running := max(0, begun-ended)
		waited += float64(s.in) * float64(running)
		prompt += float64(s.in)
		decoded += float64(max(s.out-1, 0))
	}
	if prompt <= 0 || decoded <= 0 {
		return nil
	}
	w := &phases.PrefillWait{Requests: len(a.spans), DecodeBatch: waited / prompt, PromptTokensPerToken: waited / decoded}
	if !a.chunksCut {
		w.StallMsPerToken, w.CleanGapMs, w.CleanShare, w.Measured = stalls(a.spans, firsts)
	}
	return w
}

// stalls is what the measured requests' token gaps held beyond a clean
// decode step, per output token after the first, in ms: a gap that saw
// another request's first token (a prompt prefilled between its steps, or
// a prefill chunk inside its step) took its length less the request's
// clean gap, the median of its gaps that saw none (per token). The window
// of a gap is shifted by a quarter of the clean gap, so a first token
// delivered with the same step's tokens counts in that step. Also the
// mean clean gap, the share of gaps that were clean, and how many requests
// were read.
func stalls(spans []decodeSpan, firsts []time.Duration) (stall, clean, share float64, n int) {
	var total, tokens, cleanSum time.Duration
	var count float64
	allGaps, cleanN := 0, 0
	for _, s := range spans {
		if !s.measured || len(s.at) < 2 {
			continue
		}
		gaps := make([]time.Duration, 0, len(s.at)-1)
		for i := 1; i < len(s.at); i++ {
			gaps = append(gaps, (s.at[i]-s.at[i-1])/time.Duration(max(s.n[i], 1)))
		}
		base := median(slices.Clone(gaps)) // gaps stay in order: gaps[i] is s.at[i]..s.at[i+1]
		h := base / 4
		saw := make([]bool, len(gaps))
		var cleanGaps []time.Duration
		for i := range gaps {
			from, to := s.at[i]+h, s.at[i+1]+h
			lo := sort.Search(len(firsts), func(j int) bool { return firsts[j] > from })
			hi := sort.Search(len(firsts), func(j int) bool { return firsts[j] > to })
			saw[i] = hi > lo
			if !saw[i] {
				cleanGaps = append(cleanGaps, gaps[i])
			}
		}
		allGaps += len(gaps)
		cleanN += len(cleanGaps)
		if len(cleanGaps) > 0 {
			base = median(cleanGaps)
		}
		for i := range gaps {
			if saw[i] {
				total += max(0, s.at[i+1]-s.at[i]-base*time.Duration(max(s.n[i+1], 1)))
			}
			tokens += time.Duration(max(s.n[i+1], 1))
		}
		cleanSum += base
		count++
		n++
	}
	if tokens == 0 {
		return 0, 0, 0, 0
	}
	return float64(total) / float64(tokens) / 1e6, float64(cleanSum) / count / 1e6, float64(cleanN) / float64(allGaps), n
}

// median of ds (sorted in place).
func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

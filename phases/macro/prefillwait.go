package macro

import (
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
}

// maxSpans bounds the requests a level keeps for its prefill wait (16
// bytes × 4 each); a longer level reports none and says why.
const maxSpans = 1 << 18

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
	a.spans = append(a.spans, decodeSpan{first: sent + r.ttft, end: r.end, half: half, in: r.InputTokens, out: r.OutputTokens})
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
	return &phases.PrefillWait{Requests: len(a.spans), DecodeBatch: waited / prompt, PromptTokensPerToken: waited / decoded}
}

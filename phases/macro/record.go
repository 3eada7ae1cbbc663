package macro

import (
	"time"
)

// Token sources, best first: where a request's output token count came from.
const (
	SourceContinuous = "continuous_usage" // usage on every chunk: tokens per chunk known exactly
	SourceFinal      = "final_usage"      // one usage at the end: total exact, per chunk estimated
	SourceChunks     = "chunks"           // no usage: one token per text chunk (a guess)
)

// sourceRank orders token sources from best (0) to worst.
func sourceRank(s string) int {
	switch s {
	case SourceContinuous:
		return 0
	case SourceFinal:
		return 1
	case SourceChunks:
		return 2
	}
	return 3
}

// Failure reasons. HTTP errors are "http_<status>".
const (
	FailErrorEvent = "error_event"   // data: {"error": ...} after HTTP 200
	FailCutStream  = "cut_stream"    // the stream ended without [DONE]
	FailTimeout    = "timeout"       // the request ran past Config.Timeout
	FailConnect    = "connect_error" // no connection, or it broke before a response
	FailBadEvent   = "bad_event"     // an event that is not JSON
	FailNoTokens   = "no_tokens"     // [DONE] with no token at all
	FailCancelled  = "cancelled"     // the sweep was cancelled mid-request (not counted as failed)
)

// Record is one request as the JSONL file holds it. Times are milliseconds;
// scheduled_s and sent_s are seconds since the sweep started.
type Record struct {
	Concurrency  int     `json:"concurrency"`
	Rate         float64 `json:"request_rate,omitempty"`
	Index        int     `json:"index"`
	Warmup       bool    `json:"warmup,omitempty"`
	ScheduledS   float64 `json:"scheduled_s"`
	SentS        float64 `json:"sent_s"`
	SendLagMs    float64 `json:"send_lag_ms"`
	TTFBms       float64 `json:"ttfb_ms,omitempty"`
	TTFTms       float64 `json:"ttft_ms,omitempty"`
	TTFATms      float64 `json:"ttfat_ms,omitempty"` // first non-reasoning token
	E2ELms       float64 `json:"e2el_ms,omitempty"`
	TPOTms       float64 `json:"tpot_ms,omitempty"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	TokenSource  string  `json:"token_source,omitempty"`
	Chunks       int     `json:"chunks"`
	Failure      string  `json:"failure,omitempty"`
	Error        string  `json:"error,omitempty"`

	// Kept for aggregation, not written.
	ttft, tpot, e2el time.Duration
	sendLag          time.Duration
	itl              []itlSample
	end              time.Duration // since sweep start
	endAt            time.Time
}

// itlSample is one chunk gap shared by the tokens it carried.
type itlSample struct {
	perToken time.Duration
	tokens   int
}

// Completed reports whether the request counts as completed.
func (r *Record) Completed() bool { return r.Failure == "" }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// timeline collects the token chunks of one request as they arrive.
type timeline struct {
	at     []time.Duration // since send, per token chunk
	tokens []int           // tokens in that chunk, -1 when unknown
	cumul  int             // last cumulative completion_tokens seen
	allCum bool            // every token chunk carried usage
	final  int             // completion_tokens of the last usage seen (-1 none)
	prompt int
}

func (t *timeline) reset() {
	t.at, t.tokens = t.at[:0], t.tokens[:0]
	t.cumul, t.allCum, t.final, t.prompt = 0, true, -1, -1
}

// add takes one parsed chunk that arrived at offset at. It returns the
// number of tokens the chunk carried as far as is known (1 when unknown) and
// whether it was a token chunk.
func (t *timeline) add(c *chunk, at time.Duration) (int, bool) {
	n := -1
	if c.HasUsage {
		t.final = c.Completion
		if c.Prompt > 0 {
			t.prompt = c.Prompt
		}
		if c.Choices > 0 {
			n = c.Completion - t.cumul
			t.cumul = c.Completion
		}
	}
	token := c.Token() || n > 0
	if !token {
		return 0, false
	}
	if n < 0 {
		t.allCum = false
	}
	if n == 0 {
		// Text but no new completion tokens: count the text, not the usage.
		n = -1
		t.allCum = false
	}
	t.at = append(t.at, at)
	t.tokens = append(t.tokens, n)
	if n < 1 {
		return 1, true
	}
	return n, true
}

// finish turns the timeline into r's metrics and ITL samples.
func (t *timeline) finish(r *Record) {
	k := len(t.at)
	r.Chunks = k
	if k == 0 {
		return
	}
	switch {
	case t.allCum && t.final >= 0:
		r.TokenSource = SourceContinuous
		r.OutputTokens = t.cumul
		if t.final > r.OutputTokens {
			r.OutputTokens = t.final
		}
	case t.final > 0:
		r.TokenSource = SourceFinal
		r.OutputTokens = t.final
	default:
		r.TokenSource = SourceChunks
		r.OutputTokens = k
	}
	if t.prompt >= 0 {
		r.InputTokens = t.prompt
	}
	r.ttft = t.at[0]
	r.e2el = t.at[k-1]
	if r.OutputTokens > 1 {
		r.tpot = (r.e2el - r.ttft) / time.Duration(r.OutputTokens-1)
	}
	r.itl = r.itl[:0]
	if k < 2 {
		return
	}
	if r.TokenSource == SourceContinuous {
		for i := 1; i < k; i++ {
			n := t.tokens[i]
			gap := t.at[i] - t.at[i-1]
			r.itl = append(r.itl, itlSample{perToken: gap / time.Duration(n), tokens: n})
		}
		return
	}
	// Tokens per chunk unknown: share the tokens after the first chunk
	// evenly over the later chunks.
	per := float64(r.OutputTokens-1) / float64(k-1)
	if per < 1 {
		per = 1
	}
	w := int(per + 0.5)
	for i := 1; i < k; i++ {
		gap := t.at[i] - t.at[i-1]
		r.itl = append(r.itl, itlSample{perToken: time.Duration(float64(gap) / per), tokens: w})
	}
}

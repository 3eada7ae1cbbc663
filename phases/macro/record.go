package macro

import (
	"time"
)

// Token sources, best first: where a request's output token count came from.
const (
	SourceContinuous = "continuous_usage" // usage on every chunk: tokens per chunk known exactly
	SourceFinal      = "final_usage"      // one usage at the end: total exact, per chunk estimated
	SourceTokenize   = "tokenize"         // no usage: the received text counted by the server's /tokenize
	SourceChunks     = "chunks"           // no usage: one token per text chunk (a guess)
)

// sourceRank orders token sources from best (0) to worst.
func sourceRank(s string) int {
	switch s {
	case SourceContinuous:
		return 0
	case SourceFinal:
		return 1
	case SourceTokenize:
		return 2
	case SourceChunks:
		return 3
	}
	return 4
}

// Failure reasons. HTTP errors are "http_<status>". A reason names the
// side that failed; the record keeps the HTTP status and the first bytes
// of what the server said (Record.Status, Record.Body).
const (
	FailErrorEvent = "error_event"   // data: {"error": ...} after HTTP 200, or finish_reason "error"
	FailAborted    = "server_abort"  // finish_reason "abort": the server gave the request up
	FailCutStream  = "cut_stream"    // the stream ended without [DONE]
	FailTimeout    = "timeout"       // the request ran past Config.Timeout
	FailConnect    = "connect_error" // no connection, or it broke before a response
	FailClient     = "client_error"  // this machine's own limit (open files, ports, memory): not the server's failure
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
	Status       int     `json:"status,omitempty"` // the HTTP status of a failed request
	Body         string  `json:"body,omitempty"`   // the first 200 bytes of its error body or event
	// CachedTokens are the prompt tokens the server's prefix cache held, as
	// its usage said (prompt_tokens_details.cached_tokens; nil: not said).
	CachedTokens *int `json:"cached_tokens,omitempty"`
	// Session and Turn name a multi-turn session's request: the session's
	// id (sent in the session header) and the turn's index from 1.
	Session string `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// ITLms and ChunkGapsms are the request's inter-token gaps, written
	// only when Config.Gaps asks: ITLms one per output token after the
	// first, as the level's ITL counts them (a chunk of n tokens gives n
	// values of its gap / n), ChunkGapsms one per gap between chunks with
	// choices, as the level's per-chunk ITL.
	ITLms       []float64 `json:"itl_ms,omitempty"`
	ChunkGapsms []float64 `json:"chunk_gaps_ms,omitempty"`

	// Kept for aggregation, not written.
	ttft, tpot, e2el time.Duration
	sendLag          time.Duration
	itl              []itlSample
	chunkGaps        []time.Duration // between chunks with choices, as vLLM's ITL
	errBody          string          // the error body, up to 4 KiB, for the pre-flight's decision
	contAsked        bool            // continuous_usage_stats was asked for
	chatShape        bool            // chat-shaped chunks (delta) on the completions API
	promptUsage      bool            // InputTokens came from the server's usage
	end              time.Duration   // since sweep start
	endAt            time.Time
	maxTokens        int // the output length asked for (0: the sweep's)
	// A session's turn: its user, the chat messages sent (the history with
	// the real answers), and the answer's text kept for the next turn.
	user     int
	msgs     []chatMsg
	wantText bool
	answer   string
	// tokEvents are the stream's token events, tokReads the body reads
	// that brought at least one: how bunched the stream arrived.
	tokEvents, tokReads int
}

// itlSample is one chunk gap shared by the tokens it carried.
type itlSample struct {
	perToken time.Duration
	tokens   int
}

// EachGap calls itl with each of the request's inter-token latencies as
// the level's ITL takes them (a chunk's gap per token, and the tokens it
// carried), and chunk with each gap between chunks with choices.
func (r *Record) EachGap(itl func(perToken time.Duration, tokens int), chunk func(time.Duration)) {
	for _, s := range r.itl {
		itl(s.perToken, s.tokens)
	}
	for _, g := range r.chunkGaps {
		chunk(g)
	}
}

// fillGaps writes the gaps into the record's JSON fields, in ms to the µs.
func (r *Record) fillGaps() {
	r.ITLms, r.ChunkGapsms = r.ITLms[:0], r.ChunkGapsms[:0]
	r.EachGap(func(d time.Duration, n int) {
		for range n {
			r.ITLms = append(r.ITLms, float64(d/time.Microsecond)/1e3)
		}
	}, func(d time.Duration) { r.ChunkGapsms = append(r.ChunkGapsms, float64(d/time.Microsecond)/1e3) })
}

// Completed reports whether the request counts as completed.
func (r *Record) Completed() bool { return r.Failure == "" }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// timeline collects the token chunks of one request as they arrive.
type timeline struct {
	at      []time.Duration // since send, per token chunk
	tokens  []int           // tokens in that chunk, -1 when unknown
	chunkAt []time.Duration // since send, every chunk that has choices
	end     time.Duration   // the response's last chunk: finish_reason, else [DONE]; -1 none
	text    []byte          // the received text as raw JSON string bodies, when usage is missing
	textCut bool            // text grew past maxText
	keep    bool            // keep the text (the server has /tokenize)
	keepAll bool            // keep the text even when usage comes (a session's answer)
	counted int             // output tokens counted by /tokenize, -1 none
	delta   bool            // some chunk had a chat delta
	cumul   int             // last cumulative completion_tokens seen
	allCum  bool            // every token chunk carried usage
	final   int             // completion_tokens of the last usage seen (-1 none)
	prompt  int
	cached  int // the usage's cached prompt tokens (-1 none said)
}

func (t *timeline) reset() {
	t.at, t.tokens, t.chunkAt, t.text = t.at[:0], t.tokens[:0], t.chunkAt[:0], t.text[:0]
	t.cumul, t.allCum, t.final, t.prompt, t.cached = 0, true, -1, -1, -1
	t.end, t.textCut, t.counted, t.delta = -1, false, -1, false
}

// maxText bounds the text kept per request for /tokenize (a longer one is
// counted by chunks, and said so).
const maxText = 256 << 10

// done marks the [DONE] event at offset at: the response's end unless a
// finish_reason chunk came.
func (t *timeline) done(at time.Duration) {
	if t.end < 0 {
		t.end = at
	}
}

// textString is the received text, decoded.
func (t *timeline) textString() string { return unquote(t.text) }

// add takes one parsed chunk that arrived at offset at. It returns the
// number of tokens the chunk carried as far as is known (1 when unknown) and
// whether it was a token chunk.
func (t *timeline) add(c *chunk, at time.Duration) (int, bool) {
	if c.Choices > 0 {
		t.chunkAt = append(t.chunkAt, at)
	}
	if c.FinishReason != "" {
		t.end = at
	}
	t.delta = t.delta || c.Delta
	if len(c.Text) > 0 && (t.keepAll || t.keep && !c.HasUsage) {
		if len(t.text)+len(c.Text) > maxText {
			t.textCut = true
		} else if !t.textCut {
			t.text = append(t.text, c.Text...)
		}
	}
	n := -1
	if c.HasUsage {
		t.final = c.Completion
		if c.Prompt > 0 {
			t.prompt = c.Prompt
		}
		if c.HasCached {
			t.cached = c.Cached
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
	case t.final < 0 && t.counted > 0:
		r.TokenSource = SourceTokenize
		r.OutputTokens = t.counted
	default:
		r.TokenSource = SourceChunks
		r.OutputTokens = k
	}
	if t.prompt >= 0 {
		r.InputTokens = t.prompt
		r.promptUsage = true
	}
	if t.cached >= 0 {
		r.CachedTokens = new(t.cached)
	}
	r.chatShape = t.delta
	r.ttft = t.at[0]
	// E2EL ends at the response's last chunk (the one with finish_reason,
	// else [DONE]), as vLLM's does, not at the last text.
	r.e2el = max(t.at[k-1], t.end)
	r.chunkGaps = r.chunkGaps[:0]
	for i := 1; i < len(t.chunkAt); i++ {
		r.chunkGaps = append(r.chunkGaps, t.chunkAt[i]-t.chunkAt[i-1])
	}
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

package macro_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// fakeServer is a small OpenAI-compatible server with the habits of the
// third-party servers people test clients against. Each completion request
// gets an index in arrival order (the pre-flight request is 0).
type fakeServer struct {
	listed        []string // /v1/models ids; nil: 404
	completions   int      // non-zero: every completion request answers this status
	textPlain     bool     // SSE sent as text/plain
	usage         string   // "continuous", "final" or "" (none)
	wordsPerChunk int      // tokens per text chunk (default 1)
	tokenize      bool     // has /tokenize (a token is a word)
	roleFirst     bool     // a role-only first chunk (chat)
	finishOnly    bool     // a finish-only last chunk, then a pause before [DONE]
	fixedTokens   int      // non-zero: sends this many tokens whatever max_tokens says
	every         int      // with ctxError or streamError: every n-th request (index % n == n-1)
	ctxError      bool     // those requests get HTTP 400 "maximum context length"
	streamError   bool     // those requests get an error event after two chunks
	gap           time.Duration
	requests      atomic.Int64
	firstMax      atomic.Int64 // max_tokens of request 0 (the pre-flight)
	firstCont     atomic.Bool  // request 0 asked for continuous_usage_stats
	tokenizeCalls atomic.Int64
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		if f.listed == nil {
			http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
			return
		}
		var b strings.Builder
		for i, id := range f.listed {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%q,"object":"model"}`, id)
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, b.String())
	case "/tokenize":
		if !f.tokenize {
			http.NotFound(w, r)
			return
		}
		f.tokenizeCalls.Add(1)
		var q struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&q)
		fmt.Fprintf(w, `{"count":%d}`, len(strings.Fields(q.Prompt)))
	case "/v1/completions", "/v1/chat/completions":
		f.complete(w, r, r.URL.Path == "/v1/chat/completions")
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	idx := f.requests.Add(1) - 1
	var q struct {
		Prompt        string
		MaxTokens     int `json:"max_tokens"`
		MaxCompletion int `json:"max_completion_tokens"`
		StreamOptions struct {
			Continuous bool `json:"continuous_usage_stats"`
		} `json:"stream_options"`
	}
	_ = json.NewDecoder(r.Body).Decode(&q)
	if idx == 0 {
		f.firstMax.Store(int64(q.MaxTokens))
		f.firstCont.Store(q.StreamOptions.Continuous)
	}
	picked := f.every > 0 && idx%int64(f.every) == int64(f.every-1)
	switch {
	case f.completions != 0:
		http.Error(w, `{"error":{"message":"Not Found: no such route","code":404}}`, f.completions)
		return
	case picked && f.ctxError:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"object":"error","message":"This model's maximum context length is 128 tokens. However, you requested 9999 tokens.","type":"BadRequestError","code":400}`)
		return
	}
	n := max(q.MaxTokens, q.MaxCompletion)
	if f.fixedTokens > 0 {
		n = f.fixedTokens
	}
	per := max(f.wordsPerChunk, 1)
	prompt := len(strings.Fields(q.Prompt))
	ct := "text/event-stream"
	if f.textPlain {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	fl := w.(http.Flusher)
	send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s); fl.Flush() }
	usage := func(done int) string {
		return fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, done, prompt+done)
	}
	if f.roleFirst {
		send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	}
	for done, c := 0, 0; done < n; c++ {
		time.Sleep(f.gap)
		k := min(per, n-done)
		text := strings.Repeat("tok ", k)
		done += k
		if picked && f.streamError && c == 2 {
			send(`{"error":{"object":"error","message":"engine dead: CUDA error: an illegal memory access","code":500}}`)
			return
		}
		choice := fmt.Sprintf(`{"index":0,"text":%q}`, text)
		if chat {
			choice = fmt.Sprintf(`{"index":0,"delta":{"content":%q}}`, text)
		}
		if done == n && !f.finishOnly {
			choice = strings.TrimSuffix(choice, "}") + `,"finish_reason":"length"}`
		}
		u := ""
		if f.usage == "continuous" {
			u = "," + usage(done)
		}
		send(fmt.Sprintf(`{"choices":[%s]%s}`, choice, u))
	}
	if f.finishOnly {
		time.Sleep(3 * f.gap)
		send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		time.Sleep(6 * f.gap)
	}
	if f.usage != "" {
		send(`{"choices":[],` + usage(n) + `}`)
	}
	send("[DONE]")
}

func warned(ws []string, s string) bool { return strings.Contains(strings.Join(ws, "\n"), s) }

// A server that sends usage only at the end though continuous usage was
// asked for: exact totals, and a warning that tokens per chunk are estimated.
func TestCompatUsageOnlyAtEnd(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "final", tokenize: true, gap: time.Millisecond}
	res := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{2}, Requests: 6, InputLen: 8, OutputLen: 12, Seed: 1})
	lv := res.Levels[0]
	if lv.Completed != 6 || lv.TokenSource != macro.SourceFinal || lv.TotalOutputTokens != 72 || lv.InputTokenSource != "usage" {
		t.Errorf("completed %d source %s tokens %d input %s", lv.Completed, lv.TokenSource, lv.TotalOutputTokens, lv.InputTokenSource)
	}
	if !warned(lv.Warnings, "continuous_usage_stats was asked for but 6 of 6") || !warned(res.Warnings, "C=2: continuous_usage_stats") {
		t.Errorf("warnings %q / %q", lv.Warnings, res.Warnings)
	}
	if f.tokenizeCalls.Load() != 1 {
		t.Errorf("/tokenize called %d times: with usage only the prompt is calibrated", f.tokenizeCalls.Load())
	}
	// The pre-flight went first, with the sweep's settings, and is not
	// counted: the server saw 7 requests, the level has 6.
	if f.requests.Load() != 7 || f.firstMax.Load() != 12 || !f.firstCont.Load() || res.Preflight != "ok" {
		t.Errorf("server saw %d requests; the first asked max_tokens %d, continuous %v; preflight %q",
			f.requests.Load(), f.firstMax.Load(), f.firstCont.Load(), res.Preflight)
	}
}

// No usage at all and several words per chunk: the server's /tokenize
// counts the received text; without it, chunks are counted and said to be.
func TestCompatNoUsageSeveralWordsPerChunk(t *testing.T) {
	t.Parallel()
	for _, tok := range []bool{true, false} {
		f := &fakeServer{listed: []string{"m"}, wordsPerChunk: 5, tokenize: tok, gap: time.Millisecond}
		res := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{2}, Requests: 4, InputLen: 8, OutputLen: 20, Seed: 2})
		lv := res.Levels[0]
		src, tokens, warn := macro.SourceTokenize, int64(4*20), "counted by the server's /tokenize"
		if !tok {
			src, tokens, warn = macro.SourceChunks, 4*4, "counted one per chunk"
		}
		if lv.Completed != 4 || lv.TokenSource != src || lv.TotalOutputTokens != tokens {
			t.Errorf("tokenize %v: completed %d source %s tokens %d, want %s %d", tok, lv.Completed, lv.TokenSource, lv.TotalOutputTokens, src, tokens)
		}
		if !warned(lv.Warnings, warn) || warned(lv.Warnings, "output length not honoured") {
			t.Errorf("tokenize %v: warnings %q", tok, lv.Warnings)
		}
		// TPOT follows the count: 19 gaps of 5 tokens' time over 3 chunk gaps.
		if tok && (lv.MedianTPOTms <= 0 || lv.MedianITLms <= 0) {
			t.Errorf("TPOT %.2f ITL %.2f", lv.MedianTPOTms, lv.MedianITLms)
		}
	}
}

// A role-only first chunk and a finish-only last chunk (then a pause before
// [DONE]): TTFT is the first text, E2EL ends at the finish chunk, and the
// per-chunk ITL counts the role and finish chunks as vLLM's does.
func TestCompatRoleAndFinishChunks(t *testing.T) {
	t.Parallel()
	gap := 20 * time.Millisecond
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", roleFirst: true, finishOnly: true, gap: gap}
	res := runSweep(t, macro.Config{URL: f.start(t), API: macro.APIChat, Concurrency: []int{1}, Requests: 2, InputLen: 8, OutputLen: 4, Seed: 3})
	lv := res.Levels[0]
	if lv.Completed != 2 || lv.TotalOutputTokens != 8 || lv.TokenSource != macro.SourceContinuous {
		t.Fatalf("completed %d tokens %d source %s", lv.Completed, lv.TotalOutputTokens, lv.TokenSource)
	}
	// Text at 20, 40, 60, 80 ms; finish at 140 ms; [DONE] at 260 ms.
	ms := float64(gap / time.Millisecond)
	if lv.MedianTTFTms < 0.9*ms || lv.MedianTTFBms > 0.5*ms {
		t.Errorf("TTFT %.1f ms TTFB %.1f ms: the role chunk was taken for a token", lv.MedianTTFTms, lv.MedianTTFBms)
	}
	if lv.MedianE2ELms < 7*ms-2 || lv.MedianE2ELms > 12*ms {
		t.Errorf("E2EL %.1f ms, want the finish chunk's time (about %.0f ms), not the last text's nor [DONE]'s", lv.MedianE2ELms, 7*ms)
	}
	// TPOT = (E2EL - TTFT) / 3, so it includes the wait for the finish chunk.
	if want := (lv.MedianE2ELms - lv.MedianTTFTms) / 3; lv.MedianTPOTms < 0.8*want || lv.MedianTPOTms > 1.2*want {
		t.Errorf("TPOT %.1f ms, want about %.1f", lv.MedianTPOTms, want)
	}
	// Per chunk: role→text 20, three 20 ms gaps, text→finish 60 ms.
	if lv.P99ITLChunkms < 2.5*ms || lv.MedianITLChunkms < 0.9*ms {
		t.Errorf("per-chunk ITL p50 %.1f p99 %.1f", lv.MedianITLChunkms, lv.P99ITLChunkms)
	}
	if warned(lv.Warnings, "chat-shaped") {
		t.Errorf("chat chunks on the chat API warned about: %q", lv.Warnings)
	}
}

// SSE sent as text/plain is read as SSE.
func TestCompatTextPlainSSE(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", textPlain: true}
	lv := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{1}, Requests: 3, InputLen: 8, OutputLen: 5, Seed: 4}).Levels[0]
	if lv.Completed != 3 || lv.Failed != 0 || lv.TotalOutputTokens != 15 {
		t.Errorf("completed %d failed %d %v tokens %d", lv.Completed, lv.Failed, lv.Failures, lv.TotalOutputTokens)
	}
}

// HTTP 400 "maximum context length" on some requests: each is one failed
// request with its status and text, never retried, and continuous usage
// stays on for the others.
func TestCompatContextLengthErrors(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", every: 3, ctxError: true, gap: time.Millisecond}
	var jsonl bytes.Buffer
	res := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{2}, Requests: 12, InputLen: 8, OutputLen: 5, Seed: 5, JSONL: &jsonl})
	lv := res.Levels[0]
	// Requests 1..12 after the pre-flight: indexes 2, 5, 8, 11 fail.
	if lv.Completed != 8 || lv.Failed != 4 || lv.Failures["http_400"] != 4 || f.requests.Load() != 13 {
		t.Errorf("completed %d failed %d %v; the server saw %d requests, want 13", lv.Completed, lv.Failed, lv.Failures, f.requests.Load())
	}
	if !res.Continuous || lv.TokenSource != macro.SourceContinuous {
		t.Errorf("a context-length 400 turned continuous usage off: %v %s", res.Continuous, lv.TokenSource)
	}
	if len(lv.FailureExamples) != 1 {
		t.Fatalf("examples %+v", lv.FailureExamples)
	}
	e := lv.FailureExamples[0]
	if e.Kind != "http_400" || e.Status != 400 || e.Count != 4 || !strings.Contains(e.Body, "maximum context length") || len(e.Body) > 200 {
		t.Errorf("example %+v", e)
	}
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(jsonl.Bytes()), []byte("\n")) {
		var r macro.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Failure != "" {
			n++
			if r.Status != 400 || !strings.HasPrefix(r.Body, `{"object":"error","message":"This model's maximum context length`) {
				t.Errorf("record %+v", r)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d failed records in the JSONL, want 4", n)
	}
}

// 404 on /v1/completions: the pre-flight stops the sweep with the status
// and the server's text; without it every request is a failed http_404 and
// the level is not judged client-bound (the command's side is tested with
// the command).
func TestCompat404OnCompletions(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, completions: http.StatusNotFound}
	url := f.start(t)
	s, _ := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{4}, Requests: 8}))
	_, err := s.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "pre-flight") || !strings.Contains(err.Error(), "HTTP 404") ||
		!strings.Contains(err.Error(), "no such route") || strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("pre-flight: %v", err)
	}
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Requests: 8, NoPreflight: true})
	lv := res.Levels[0]
	if lv.Completed != 0 || lv.Failures["http_404"] != 8 || lv.ClientBound || len(lv.FailureExamples) != 1 || lv.FailureExamples[0].Count != 8 {
		t.Errorf("completed %d failures %v client bound %v (%s) examples %+v", lv.Completed, lv.Failures, lv.ClientBound, lv.ClientBoundReason, lv.FailureExamples)
	}
}

// 404 on /v1/models: the server answered, so it is not "cannot reach";
// without --model the message asks for it, with --model the sweep runs.
func TestCompat404OnModels(t *testing.T) {
	t.Parallel()
	f := &fakeServer{usage: "continuous"}
	url := f.start(t)
	s, _ := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{1}, Requests: 2}))
	_, err := s.Run(context.Background(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "the server does not list models: give --model (") || !strings.Contains(err.Error(), "HTTP 404") ||
		strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("no model list: %v", err)
	}
	// A list with no ids says the same.
	empty := (&fakeServer{listed: []string{}, usage: "continuous"}).start(t)
	s, _ = macro.NewSweep(macro.Complete(macro.Config{URL: empty, Concurrency: []int{1}, Requests: 2}))
	if _, err := s.Run(context.Background(), nil); err == nil || !strings.HasPrefix(err.Error(), "the server does not list models: give --model (") {
		t.Errorf("empty model list: %v", err)
	}
	res := runSweep(t, macro.Config{URL: url, Model: "any", Concurrency: []int{1}, Requests: 2, InputLen: 4, OutputLen: 3})
	if lv := res.Levels[0]; lv.Completed != 2 || res.Model != "any" {
		t.Errorf("with --model: completed %d model %q", lv.Completed, res.Model)
	}
}

// A server that answers any model name: a --model it does not list works,
// with a warning that names what it lists.
func TestCompatAnyModelName(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"served/one"}, usage: "continuous"}
	res := runSweep(t, macro.Config{URL: f.start(t), Model: "whatever", Concurrency: []int{1}, Requests: 2, InputLen: 4, OutputLen: 3})
	if lv := res.Levels[0]; lv.Completed != 2 || !warned(res.Warnings, `--model "whatever" is not in the server's /v1/models (it lists: served/one)`) {
		t.Errorf("completed %d warnings %q", lv.Completed, res.Warnings)
	}
}

// A server that ignores max_tokens: its real lengths are counted, and the
// level says the output length was not honoured.
func TestCompatIgnoresMaxTokens(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", fixedTokens: 7}
	res := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{2}, Requests: 4, InputLen: 4, OutputLen: 30})
	lv := res.Levels[0]
	if lv.Completed != 4 || lv.TotalOutputTokens != 28 || !warned(lv.Warnings, "output length not honoured: 4 of 4 completed requests counted more than 10% off --output-len 30 (7 to 7 tokens)") {
		t.Errorf("completed %d tokens %d warnings %q", lv.Completed, lv.TotalOutputTokens, lv.Warnings)
	}
}

// An error inside a 200 stream is a failed error_event with the event's
// text; the other requests complete.
func TestCompatErrorInsideStream(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", every: 2, streamError: true}
	res := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{2}, Requests: 8, InputLen: 4, OutputLen: 6})
	lv := res.Levels[0]
	// Indexes 1, 3, 5, 7 fail (the pre-flight is 0): 4 of the 8 measured.
	if lv.Completed != 4 || lv.Failures[macro.FailErrorEvent] != 4 || lv.TotalOutputTokens != 24 {
		t.Errorf("completed %d failures %v tokens %d", lv.Completed, lv.Failures, lv.TotalOutputTokens)
	}
	if len(lv.FailureExamples) != 1 || !strings.Contains(lv.FailureExamples[0].Body, "illegal memory access") || lv.FailureExamples[0].Status != 0 {
		t.Errorf("examples %+v", lv.FailureExamples)
	}
}

// Chat-shaped chunks on the completions API are counted, and said.
func TestCompatChatChunksOnCompletions(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, usage: "continuous", roleFirst: true}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			f.complete(w, r, true)
			return
		}
		f.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	lv := runSweep(t, macro.Config{URL: srv.URL, Concurrency: []int{1}, Requests: 2, InputLen: 4, OutputLen: 3}).Levels[0]
	if lv.Completed != 2 || lv.TotalOutputTokens != 6 || !warned(lv.Warnings, "chat-shaped chunks (delta) on the completions API in 2 of 2") {
		t.Errorf("completed %d tokens %d warnings %q", lv.Completed, lv.TotalOutputTokens, lv.Warnings)
	}
}

// Text past the bound kept per request is not sent to /tokenize: the
// request is counted by chunks, and said to be.
func TestCompatTextTooLongForTokenize(t *testing.T) {
	t.Parallel()
	f := &fakeServer{listed: []string{"m"}, wordsPerChunk: 1000, tokenize: true}
	lv := runSweep(t, macro.Config{URL: f.start(t), Concurrency: []int{1}, Requests: 2, InputLen: 8, OutputLen: 70000, Seed: 2}).Levels[0]
	if lv.Completed != 2 || lv.TokenSource != macro.SourceChunks || lv.TotalOutputTokens != 2*70 || !warned(lv.Warnings, "counted one per chunk") {
		t.Errorf("completed %d source %s tokens %d warnings %q", lv.Completed, lv.TokenSource, lv.TotalOutputTokens, lv.Warnings)
	}
	if n := f.tokenizeCalls.Load(); n != 1 {
		t.Errorf("/tokenize called %d times, want only the prompt's calibration", n)
	}
}

package vllmemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// emuBody is the part of a completion request the emulator reads.
type emuBody struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []emuMessage    `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

type emuMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// promptTokens counts a completions prompt (a string, strings, or token ids).
func promptTokens(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return countTokens(s)
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		n := 0
		for _, p := range ss {
			n += countTokens(p)
		}
		return n
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids)
	}
	return 0
}

// messageTokens counts chat messages, with a few tokens of chat template
// per message.
func messageTokens(ms []emuMessage) int {
	n := 0
	for _, m := range ms {
		n += 4
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			n += countTokens(s)
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			for _, p := range parts {
				n += countTokens(p.Text)
			}
		}
	}
	return n
}

func (e *Emulator) serveTokenize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "BadRequestError", "use POST")
		return
	}
	var b emuBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON: "+err.Error())
		return
	}
	n := promptTokens(b.Prompt)
	if len(b.Messages) > 0 {
		n = messageTokens(b.Messages)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 1000 + i%30000
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": n, "max_model_len": e.cfg.MaxModelLen, "tokens": ids})
}

// fault is what goes wrong with one request, decided when it arrives.
type fault struct {
	cutAt, errorAt int // tokens delivered before the cut / the error event; 0 = none
}

// completion is one completion request as the emulator understood it.
type completion struct {
	body       emuBody
	chat       bool
	prompt     int      // prompt tokens
	maxTok     int      // tokens to generate
	usage      bool     // a final usage chunk was asked for
	continuous bool     // usage on every chunk was asked for
	words      []string // the prompt's words, as the prefix cache reads them
	cached     int      // prompt tokens the prefix cache held
	mark       string   // the answer's first word, unique to the request
}

func (e *Emulator) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	arrived := time.Now()
	c, ok := e.readCompletion(w, r, chat)
	if !ok {
		return
	}
	f, ok := e.decideFault(w, c.maxTok)
	if !ok {
		return
	}
	if chat {
		c.words = promptWords(nil, c.body.Messages)
	} else {
		c.words = promptWords(c.body.Prompt, nil)
	}
	c.cached = min(e.prefix.lookup(c.words), c.prompt)
	c.mark = e.nextMark()
	req := newEmuReq(c.prompt, c.maxTok, arrived)
	req.cached = c.cached
	defer req.gone.Store(true)
	if !e.submit(req) {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "the server is shutting down")
		return
	}
	if !c.body.Stream {
		e.serveWhole(w, r, req, c, f)
		return
	}
	e.serveStream(w, r, req, c, f)
}

// readCompletion checks a completion request and reads its body; false
// when it answered with an error.
func (e *Emulator) readCompletion(w http.ResponseWriter, r *http.Request, chat bool) (completion, bool) {
	c := completion{chat: chat}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "BadRequestError", "use POST")
		return c, false
	}
	if !e.auth(w, r) {
		return c, false
	}
	if !e.ready.Load() && !e.cfg.ServeBeforeReady {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "the server is not ready")
		return c, false
	}
	b := &c.body
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(b); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON: "+err.Error())
		return c, false
	}
	if b.Model != e.cfg.Model {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", b.Model))
		return c, false
	}
	c.prompt, c.maxTok = e.completionTokens(b, chat)
	if c.maxTok < 1 || c.prompt+c.maxTok > e.cfg.MaxModelLen {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			e.cfg.MaxModelLen, c.prompt+c.maxTok, c.prompt, c.maxTok))
		return c, false
	}
	if so := b.StreamOptions; so != nil && b.Stream && !e.cfg.NoUsage {
		c.usage, c.continuous = so.IncludeUsage, so.IncludeUsage && so.ContinuousUsageStats
	}
	if e.cfg.RejectContinuousUsage && b.StreamOptions != nil && b.StreamOptions.ContinuousUsageStats {
		writeError(w, http.StatusBadRequest, "BadRequestError", "stream_options.continuous_usage_stats is not supported")
		return c, false
	}
	return c, true
}

// completionTokens returns a request's prompt tokens and the tokens it asks
// for (vLLM's defaults: 16 for completions, the rest of the context for chat).
func (e *Emulator) completionTokens(b *emuBody, chat bool) (prompt, maxTok int) {
	prompt = promptTokens(b.Prompt)
	if chat {
		prompt = messageTokens(b.Messages)
	}
	maxTok = 16
	if chat {
		maxTok = e.cfg.MaxModelLen - prompt
	}
	if b.MaxTokens != nil {
		maxTok = *b.MaxTokens
	}
	if chat && b.MaxCompletionTokens != nil {
		maxTok = *b.MaxCompletionTokens
	}
	return prompt, maxTok
}

// decideFault draws what goes wrong with a request of maxTok tokens; false
// when it failed at once (answered with a 500).
func (e *Emulator) decideFault(w http.ResponseWriter, maxTok int) (fault, bool) {
	var f fault
	u := e.roll()
	switch {
	case u < e.cfg.FailureRate:
		e.mu.Lock()
		e.st.state.Injected500++
		e.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "InternalServerError", "simulated engine failure")
		return f, false
	case u < e.cfg.FailureRate+e.cfg.CutRate:
		f.cutAt = 1 + e.rollInt(max(1, maxTok-1))
	case u < e.cfg.FailureRate+e.cfg.CutRate+e.cfg.ErrorAfter200Rate:
		f.errorAt = 1 + e.rollInt(max(1, maxTok-1))
	}
	return f, true
}

// serveStream streams a request's tokens as server-sent events as the
// scheduler produces them.
func (e *Emulator) serveStream(w http.ResponseWriter, r *http.Request, req *emuReq, c completion, f fault) {
	sw := &sseWriter{w: w, chat: c.chat, prompt: c.prompt, continuous: c.continuous, reasoning: e.cfg.ReasoningTokens,
		cached: c.cached, mark: c.mark}
	if c.chat {
		sw.head = fmt.Sprintf(`{"id":"chatcmpl-%x","object":"chat.completion.chunk","created":%d,"model":%q,"choices":`,
			time.Now().UnixNano(), time.Now().Unix(), e.cfg.Model)
	} else {
		sw.head = fmt.Sprintf(`{"id":"cmpl-%x","object":"text_completion","created":%d,"model":%q,"choices":`,
			time.Now().UnixNano(), time.Now().Unix(), e.cfg.Model)
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for {
		select {
		case <-req.notify:
		case <-r.Context().Done():
			return
		}
		ev := req.take()
		if ev.abort {
			e.cut(req)
		}
		if ev.admitted && c.chat {
			sw.role()
		}
		if ev.tokens > 0 && e.streamTokens(sw, fl, req, c, f, ev.tokens) {
			return
		}
		sw.flush(fl)
	}
}

// streamTokens writes k new tokens, or those before the request's fault,
// and ends the stream where it ends; true when the response is over.
func (e *Emulator) streamTokens(sw *sseWriter, fl http.Flusher, req *emuReq, c completion, f fault, k int) bool {
	stop := 0
	if f.cutAt > 0 && sw.sent+k >= f.cutAt {
		stop = f.cutAt
	} else if f.errorAt > 0 && sw.sent+k >= f.errorAt {
		stop = f.errorAt
	}
	if stop > 0 {
		k = stop - sw.sent
	}
	if k > 0 {
		sw.tokens(k, sw.sent+k >= c.maxTok)
	}
	switch {
	case f.cutAt > 0 && stop > 0:
		sw.flush(fl)
		e.mu.Lock()
		e.st.state.InjectedCuts++
		e.mu.Unlock()
		e.cut(req)
	case f.errorAt > 0 && stop > 0:
		e.mu.Lock()
		e.st.state.InjectedErrors++
		e.mu.Unlock()
		req.gone.Store(true)
		sw.raw(`{"error":{"object":"error","message":"simulated error after the stream started","type":"InternalServerError","param":null,"code":500}}`)
		sw.raw("[DONE]")
		sw.flush(fl)
		return true
	}
	if sw.sent >= c.maxTok {
		if c.usage {
			sw.final()
		}
		sw.raw("[DONE]")
		sw.flush(fl)
		e.succeeded()
		e.keepSession(c, sw.sent)
		return true
	}
	return false
}

// cut ends the connection without finishing the response, as a crashed
// server or a dropped link does.
func (e *Emulator) cut(req *emuReq) {
	req.gone.Store(true)
	panic(http.ErrAbortHandler)
}

// serveWhole answers a non-streaming request once every token is out.
func (e *Emulator) serveWhole(w http.ResponseWriter, r *http.Request, req *emuReq, c completion, f fault) {
	chat := c.chat
	n := 0
	for n < req.maxTokens {
		select {
		case <-req.notify:
			ev := req.take()
			if ev.abort || (f.cutAt > 0 && n+ev.tokens >= f.cutAt) {
				e.cut(req)
			}
			if f.errorAt > 0 && n+ev.tokens >= f.errorAt {
				writeError(w, http.StatusInternalServerError, "InternalServerError", "simulated engine failure")
				return
			}
			n += ev.tokens
		case <-r.Context().Done():
			return
		}
	}
	text := tokenText(nil, 0, n, c.mark)
	usage := map[string]any{"prompt_tokens": req.prompt, "completion_tokens": n, "total_tokens": req.prompt + n,
		"prompt_tokens_details": map[string]int{"cached_tokens": c.cached}}
	choice := map[string]any{"index": 0, "finish_reason": "length", "logprobs": nil}
	obj := "text_completion"
	if chat {
		obj = "chat.completion"
		choice["message"] = map[string]any{"role": "assistant", "content": string(text)}
	} else {
		choice["text"] = string(text)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": fmt.Sprintf("cmpl-%x", time.Now().UnixNano()), "object": obj,
		"created": time.Now().Unix(), "model": e.cfg.Model, "choices": []any{choice}, "usage": usage})
	e.succeeded()
	e.keepSession(c, n)
}

// succeeded counts a request whose whole answer was sent.
func (e *Emulator) succeeded() {
	e.mu.Lock()
	e.st.state.Succeeded++
	e.mu.Unlock()
}

// emuWords are the emulator's output tokens.
var emuWords = strings.Fields("the model keeps writing tokens at a steady pace while the batch grows and the step time stretches")

// tokenText appends n tokens of text, starting at token index from; the
// answer's first token is its mark.
func tokenText(b []byte, from, n int, mark string) []byte {
	for i := from; i < from+n; i++ {
		b = append(b, ' ')
		if i == 0 && mark != "" {
			b = append(b, mark...)
			continue
		}
		b = append(b, emuWords[i%len(emuWords)]...)
	}
	return b
}

// AnswerMark is the pattern of the mark an answer starts with ("r" and six
// hexadecimal digits, one token), unique to each request the emulator
// took (up to 16 M): a test finds a turn's real answer in the next turn's
// prompt by it.
const AnswerMark = `r[0-9a-f]{6}`

// nextMark is the next answer's mark.
func (e *Emulator) nextMark() string {
	return fmt.Sprintf("r%06x", e.marks.Add(1)&0xffffff)
}

// keepSession caches a finished request's prompt and answer of n tokens
// as the next turn of its conversation sends them: a chat's history holds
// the answer as the assistant's message, a completion's prompt the answer
// after the prompt. The next turn's prompt hits these blocks.
func (e *Emulator) keepSession(c completion, n int) {
	words := append([]string(nil), c.words...)
	if c.chat {
		words = append(words, "assistant")
	}
	words = append(words, strings.Fields(string(tokenText(nil, 0, n, c.mark)))...)
	e.prefix.store(words)
}

// sseWriter writes one response's SSE events.
type sseWriter struct {
	w          io.Writer
	buf        []byte
	head       string
	chat       bool
	prompt     int
	sent       int
	continuous bool
	reasoning  int
	cached     int    // prompt tokens the prefix cache held
	mark       string // the answer's first word
}

func (s *sseWriter) usage(b []byte) []byte {
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(s.prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(s.prompt+s.sent), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(s.sent), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(s.cached), 10)
	return append(b, "}}"...)
}

func (s *sseWriter) event(body func(b []byte) []byte) {
	s.buf = append(s.buf, "data: "...)
	s.buf = body(s.buf)
	s.buf = append(s.buf, "\n\n"...)
}

func (s *sseWriter) raw(data string) {
	s.event(func(b []byte) []byte { return append(b, data...) })
}

func (s *sseWriter) role() {
	s.event(func(b []byte) []byte {
		b = append(b, s.head...)
		b = append(b, `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		if s.continuous {
			b = s.usage(b)
		}
		return append(b, '}')
	})
}

func (s *sseWriter) tokens(k int, last bool) {
	from := s.sent
	s.sent += k
	s.event(func(b []byte) []byte {
		b = append(b, s.head...)
		switch {
		case !s.chat:
			b = append(b, `[{"index":0,"text":"`...)
		case from < s.reasoning:
			b = append(b, `[{"index":0,"delta":{"reasoning_content":"`...)
		default:
			b = append(b, `[{"index":0,"delta":{"content":"`...)
		}
		b = tokenText(b, from, k, s.mark)
		b = append(b, '"')
		if s.chat {
			b = append(b, '}')
		}
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if last {
			b = append(b, `"length"`...)
		} else {
			b = append(b, "null"...)
		}
		if !s.chat {
			b = append(b, `,"stop_reason":null`...)
		}
		b = append(b, "}]"...)
		if s.continuous {
			b = s.usage(b)
		}
		return append(b, '}')
	})
}

func (s *sseWriter) final() {
	s.event(func(b []byte) []byte {
		b = append(b, s.head...)
		b = append(b, "[]"...)
		b = s.usage(b)
		return append(b, '}')
	})
}

func (s *sseWriter) flush(fl http.Flusher) {
	if len(s.buf) == 0 {
		return
	}
	_, _ = s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if fl != nil {
		fl.Flush()
	}
}

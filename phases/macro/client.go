package macro

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// client sends streaming completion requests and times them.
type client struct {
	cfg        Config
	hc         *http.Client
	path       string      // /v1/completions or /v1/chat/completions
	continuous atomic.Bool // continuous_usage_stats is asked for
	// canTokenize: the server has /tokenize, so output without usage is
	// counted by it.
	canTokenize atomic.Bool
	pool        sync.Pool      // *reqState
	maxLen      map[string]int // max_model_len by model id, as /v1/models lists it
	// secrets are the API key and the URL's password: a server's answer
	// that echoes one back is kept and shown without it.
	secrets []string
	conns   *conns // the transport's dialer, which opens a level's connections ahead
}

// reqState is the per-request scratch space, reused across requests.
type reqState struct {
	tl   timeline
	w    wireChunk
	c    chunk
	body bytes.Buffer
	sr   sseReader
	cr   countReader
}

// countReader counts the reads of a response body that returned data, so
// a stream's token events per read say how bunched it arrived.
type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if k > 0 {
		c.n++
	}
	return k, err
}

func newClient(cfg Config, maxConns int) *client {
	dial := cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	cs := newConns(dial, cfg.URL)
	tr := &http.Transport{
		DialContext:         cs.DialContext,
		MaxIdleConns:        maxConns + 16,
		MaxIdleConnsPerHost: maxConns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      64 << 10,
		WriteBufferSize:     16 << 10,
		ForceAttemptHTTP2:   false,
	}
	c := &client{cfg: cfg, hc: &http.Client{Transport: tr}, secrets: []string{cfg.APIKey}, conns: cs}
	if u, err := url.Parse(cfg.URL); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		c.secrets = append(c.secrets, pw)
	}
	c.path = "/v1/completions"
	if cfg.API == APIChat {
		c.path = "/v1/chat/completions"
	}
	c.continuous.Store(true)
	c.pool.New = func() any { return new(reqState) }
	return c
}

func (c *client) close() {
	c.conns.close()
	c.hc.CloseIdleConnections()
}

func (c *client) logf(format string, args ...any) {
	if c.cfg.Log != nil {
		c.cfg.Log(fmt.Sprintf(format, args...))
	}
}

func (c *client) header(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
}

// writeBody renders the request body into buf.
func (c *client) writeBody(buf *bytes.Buffer, prompt string, continuous bool, outLen int) {
	buf.Reset()
	q, _ := json.Marshal(c.cfg.Model)
	p, _ := json.Marshal(prompt)
	buf.WriteString(`{"model":`)
	buf.Write(q)
	if c.cfg.API == APIChat {
		buf.WriteString(`,"messages":[{"role":"user","content":`)
		buf.Write(p)
		fmt.Fprintf(buf, `}],"max_completion_tokens":%d`, outLen)
	} else {
		buf.WriteString(`,"prompt":`)
		buf.Write(p)
		fmt.Fprintf(buf, `,"max_tokens":%d`, outLen)
	}
	fmt.Fprintf(buf, `,"min_tokens":%d,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true`, outLen)
	if continuous {
		buf.WriteString(`,"continuous_usage_stats":true`)
	}
	buf.WriteString(`}}`)
}

// chatMsg is one message of a chat request: a session's turn sends its
// history, the server's real answers as the assistant's messages.
type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// writeMessages renders a chat request of msgs into buf, as writeBody
// does a one-message one.
func (c *client) writeMessages(buf *bytes.Buffer, msgs []chatMsg, continuous bool, outLen int) {
	buf.Reset()
	q, _ := json.Marshal(c.cfg.Model)
	m, _ := json.Marshal(msgs)
	buf.WriteString(`{"model":`)
	buf.Write(q)
	buf.WriteString(`,"messages":`)
	buf.Write(m)
	fmt.Fprintf(buf, `,"max_completion_tokens":%d,"min_tokens":%d,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true`, outLen, outLen)
	if continuous {
		buf.WriteString(`,"continuous_usage_stats":true`)
	}
	buf.WriteString(`}}`)
}

// live receives what a request sees as it happens, for the per-second tick.
type live interface {
	tokens(n int)
	firstToken(ttft time.Duration)
}

// send runs one request to its end and fills rec. A request is sent once:
// whatever it ends in is what is counted.
func (c *client) send(ctx context.Context, rec *Record, prompt string, lv live) {
	st := c.pool.Get().(*reqState)
	defer c.pool.Put(st)
	cont := c.continuous.Load()
	rec.contAsked = cont
	out := rec.maxTokens
	if out == 0 {
		out = c.cfg.OutputLen
	}
	if rec.msgs != nil && c.cfg.API == APIChat {
		c.writeMessages(&st.body, rec.msgs, cont, out)
	} else {
		c.writeBody(&st.body, prompt, cont, out)
	}
	c.once(ctx, rec, st, lv)
}

// bodyBytes is how much of an error body a record keeps.
const bodyBytes = 200

// head is the first n bytes of b as valid UTF-8.
func head(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\ufffd")
}

// once sends the request in st.body one time.
func (c *client) once(ctx context.Context, rec *Record, st *reqState, lv live) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.cfg.URL+c.path, bytes.NewReader(st.body.Bytes()))
	if err != nil {
		rec.Failure, rec.Error = FailConnect, shownURL(err.Error())
		return
	}
	c.header(req)
	if rec.Session != "" && c.cfg.SessionHeader != "" {
		req.Header.Set(c.cfg.SessionHeader, rec.Session)
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		def := FailConnect
		if isClientLimit(err) {
			def = FailClient // this machine's limit, not the server's
		}
		rec.Failure, rec.Error = failReason(ctx, rctx, err, def), shownURL(err.Error())
		return
	}
	defer resp.Body.Close()
	rec.TTFBms = ms(time.Since(sent))
	if resp.StatusCode != http.StatusOK {
		msg := c.scrub(io.ReadAll(io.LimitReader(resp.Body, 4<<10)))
		rec.Failure = fmt.Sprintf("http_%d", resp.StatusCode)
		rec.Status = resp.StatusCode
		rec.Body = head(msg, bodyBytes)
		rec.Error = oneLine(rec.Body)
		rec.errBody = string(msg)
		return
	}
	c.stream(ctx, rctx, rec, st, resp.Body, sent, lv)
}

// stream reads a 200 response's events and fills rec.
func (c *client) stream(ctx, rctx context.Context, rec *Record, st *reqState, body io.Reader, sent time.Time, lv live) {
	tl := &st.tl
	tl.reset()
	tl.keep = c.canTokenize.Load()
	tl.keepAll = rec.wantText
	st.cr = countReader{r: body}
	sr := &st.sr
	sr.reset(&st.cr)
	defer func() { sr.reset(nil); st.cr.r = nil }() // the pooled reader must not keep the response
	live := 0                                       // tokens passed to lv so far
	lastRead := 0                                   // st.cr.n at the last token event
read:
	for {
		data, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				rec.Failure, rec.Error = FailCutStream, errCutStream.Error()
			} else {
				rec.Failure, rec.Error = failReason(ctx, rctx, err, FailCutStream), err.Error()
			}
			break
		}
		at := time.Since(sent)
		ch := &st.c
		if err := parseChunk(data, &st.w, ch); err != nil {
			rec.Failure, rec.Error = FailBadEvent, fmt.Sprintf("event is not JSON: %v: %.80q", err, data)
			rec.Body = head(data, bodyBytes)
			break
		}
		switch {
		case ch.Done:
			tl.done(at)
			break read
		case ch.Err != "":
			rec.Failure, rec.Error = FailErrorEvent, oneLine(ch.Err)
			rec.Body = head(data, bodyBytes)
			break read
		}
		first := len(tl.at) == 0
		if n, tok := tl.add(ch, at); tok {
			rec.tokEvents++
			if st.cr.n != lastRead {
				rec.tokReads, lastRead = rec.tokReads+1, st.cr.n
			}
			live += n
			if lv != nil {
				lv.tokens(n)
				if first {
					lv.firstToken(at)
				}
			}
			if ch.Content && rec.TTFATms == 0 {
				rec.TTFATms = ms(at)
			}
		}
		if fail := finishFailure(ch.FinishReason); fail != "" {
			rec.Failure, rec.Error = fail, fmt.Sprintf("the server ended the request with finish_reason %q", ch.FinishReason)
			rec.Body = head(data, bodyBytes)
			break
		}
	}
	if rec.Failure == "" {
		// Read the end of the response so the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(sr.br, 64<<10))
	}
	c.endStream(ctx, rec, tl, live, lv)
}

// endStream sets a read stream's figures: its end, its tokens (counted by
// the server's tokenizer when no usage came), the tokens the level had not
// counted yet, and its latencies; a stream without a token fails.
func (c *client) endStream(ctx context.Context, rec *Record, tl *timeline, passed int, lv live) {
	rec.endAt = time.Now()
	if rec.Failure == "" && tl.final < 0 && len(tl.at) > 0 && !tl.textCut && c.canTokenize.Load() {
		// No usage: the server's tokenizer counts what it sent.
		if n, ok := c.tokenCount(ctx, tl.textString(), false); ok {
			tl.counted = n
		}
	}
	tl.finish(rec)
	if rec.wantText {
		rec.answer = strings.TrimSpace(tl.textString())
	}
	if d := rec.OutputTokens - passed; rec.Failure == "" && d > 0 && lv != nil {
		// Without usage on every chunk a chunk counted as one token; the
		// final usage gives the ones that went uncounted (chunks of several
		// tokens), so the level's throughput has them too.
		lv.tokens(d)
	}
	if rec.TTFTms = ms(rec.ttft); rec.Failure == "" {
		rec.E2ELms, rec.TPOTms = ms(rec.e2el), ms(rec.tpot)
		if rec.OutputTokens == 0 {
			rec.Failure, rec.Error = FailNoTokens, "the stream ended with no token"
		}
	}
}

// finishFailure is the failure a finish reason means: vLLM ends a request
// it gave up with "abort" and one that failed inside the engine with
// "error"; both are the server's failures, whatever text came before.
func finishFailure(reason string) string {
	switch reason {
	case "abort":
		return FailAborted
	case "error":
		return FailErrorEvent
	}
	return ""
}

// failReason names why a request ended early: the sweep's own cancellation,
// the request's timeout, or otherwise def.
func failReason(parent, rctx context.Context, err error, def string) string {
	switch {
	case parent.Err() != nil:
		return FailCancelled
	case rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	return def
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(shownURL(s)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// models returns the ids the server lists at /v1/models.
func (c *client) models(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	c.header(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s/v1/models: %w", shownURL(c.cfg.URL), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{url: shownURL(c.cfg.URL) + "/v1/models", code: resp.StatusCode, body: oneLine(string(c.scrub(body, nil)))}
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s/v1/models: not a model list: %v", shownURL(c.cfg.URL), err)
	}
	var ids []string
	c.maxLen = map[string]int{}
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
			c.maxLen[m.ID] = m.MaxModelLen
		}
	}
	return ids, nil
}

// tokenCount asks the server's /tokenize how many tokens prompt is, with
// the tokenizer's special tokens (a prompt's) or without (generated text).
// ok is false when the server has no such endpoint.
func (c *client) tokenCount(ctx context.Context, prompt string, special bool) (n int, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q := map[string]any{"model": c.cfg.Model, "prompt": prompt}
	if !special {
		q["add_special_tokens"] = false
	}
	body, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, false
	}
	c.header(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	var out struct {
		Count  int   `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out) != nil {
		return 0, false
	}
	if out.Count == 0 {
		out.Count = len(out.Tokens)
	}
	return out.Count, out.Count > 0
}

// statusError is an HTTP error answer.
type statusError struct {
	url  string
	code int
	body string
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.url, e.code)
	if e.code == http.StatusUnauthorized || e.code == http.StatusForbidden {
		msg += " (check --api-key or OPENAI_API_KEY)"
	}
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

// scrub is a server's answer (as read) with secrets hidden: the API key and
// the URL's credentials wherever they stand, and what remote.ScrubSecrets
// finds.
func (c *client) scrub(b []byte, _ error) []byte {
	if len(b) == 0 {
		return b
	}
	return []byte(remote.ScrubSecrets(string(b), c.secrets...))
}

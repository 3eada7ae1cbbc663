package macro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// errCutStream is a stream that ended before its [DONE] event.
var errCutStream = errors.New("stream ended without [DONE]")

// maxEventBytes bounds one SSE event, so a server that never sends a blank
// line cannot make the client grow without limit.
const maxEventBytes = 16 << 20

// sseReader splits a text/event-stream into the data of its events. It
// handles events split across reads, CRLF or LF line ends, ':' comment
// (ping) lines, fields other than data, and multi-line data.
type sseReader struct {
	br   *bufio.Reader
	data []byte // the current event's data, reused
	line []byte // a line longer than the buffer, reused
	has  bool   // the current event has a data field
}

func newSSEReader(r io.Reader) *sseReader {
	s := &sseReader{}
	s.reset(r)
	return s
}

// reset makes s read r, keeping its buffers (a client reuses one reader
// across requests).
func (s *sseReader) reset(r io.Reader) {
	if s.br == nil {
		s.br = bufio.NewReaderSize(r, 32<<10)
	} else {
		s.br.Reset(r)
	}
	s.data, s.has = s.data[:0], false
}

// readLine returns the next line without its line end. The slice is valid
// until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	b, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.line = append(s.line[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = s.br.ReadSlice('\n')
			s.line = append(s.line, b...)
			if len(s.line) > maxEventBytes {
				return nil, errors.New("SSE line longer than 16 MiB")
			}
		}
		b = s.line
	}
	if err != nil {
		if err == io.EOF && len(b) > 0 {
			// A last line without its newline: the stream was cut.
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// Next returns the data of the next event that has any. The slice is valid
// until the next call. At the end of the stream it returns io.EOF when the
// stream ended between events, io.ErrUnexpectedEOF inside one.
func (s *sseReader) Next() ([]byte, error) {
	s.data = s.data[:0]
	s.has = false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.has {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.has {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment or keep-alive ping
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue // event:, id:, retry: carry nothing we use
		}
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.has = true
		if len(s.data) > maxEventBytes {
			return nil, errors.New("SSE event longer than 16 MiB")
		}
	}
}

// chunk is what one streamed JSON event says, reduced to what the metrics
// need.
type chunk struct {
	Done       bool // the [DONE] sentinel
	Choices    int  // number of choices in the event
	Role       bool // a role-only delta (no token)
	Content    bool // non-empty answer text, text completion, or tool call
	Reasoning  bool // non-empty reasoning text
	HasUsage   bool
	Prompt     int
	Completion int
	// Cached is the usage's prompt_tokens_details.cached_tokens: prompt
	// tokens the server's prefix cache held (HasCached: it said).
	Cached       int
	HasCached    bool
	FinishReason string
	Err          string // an error event after HTTP 200
	Delta        bool   // a choice had a non-empty chat delta (chat-shaped)
	// Text is the generated text (answer and reasoning) as raw JSON string
	// bodies, still escaped; it points into the event's data.
	Text []byte
}

// Token reports whether the chunk carried any generated text.
func (c *chunk) Token() bool { return c.Content || c.Reasoning }

// wireChunk is the JSON shape of completions and chat chunks (and of the
// error objects servers send in-stream).
type wireChunk struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Role             string          `json:"role"`
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

var doneMarker = []byte("[DONE]")

// parseChunk decodes one event's data into c. The common shapes take a
// fast scan; anything else goes through encoding/json (reusing w).
func parseChunk(data []byte, w *wireChunk, c *chunk) error {
	*c = chunk{}
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, doneMarker) {
		c.Done = true
		return nil
	}
	if scanChunk(data, c) == nil {
		return nil
	}
	*c = chunk{}
	return parseChunkStd(data, w, c)
}

// parseChunkStd is parseChunk through encoding/json.
func parseChunkStd(data []byte, w *wireChunk, c *chunk) error {
	w.Choices = w.Choices[:0]
	w.Usage = nil
	w.Error = nil
	w.Object, w.Message = "", ""
	if err := json.Unmarshal(data, w); err != nil {
		return err
	}
	if len(w.Error) > 0 && !bytes.Equal(w.Error, []byte("null")) {
		c.Err = errorText(w.Error)
		return nil
	}
	if w.Object == "error" {
		c.Err = w.Message
		if c.Err == "" {
			c.Err = "error event"
		}
		return nil
	}
	c.Choices = len(w.Choices)
	for i := range w.Choices {
		ch := &w.Choices[i]
		if ch.Text != "" || ch.Delta.Content != "" || (len(ch.Delta.ToolCalls) > 0 && !bytes.Equal(ch.Delta.ToolCalls, []byte("null"))) {
			c.Content = true
		}
		if ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" {
			c.Reasoning = true
		}
		if ch.Delta.Role != "" {
			c.Role = true
		}
		if ch.Delta.Role != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" ||
			(len(ch.Delta.ToolCalls) > 0 && !bytes.Equal(ch.Delta.ToolCalls, []byte("null"))) {
			c.Delta = true
		}
		for _, t := range []string{ch.Text, ch.Delta.ReasoningContent, ch.Delta.Reasoning, ch.Delta.Content} {
			if t != "" {
				q, _ := json.Marshal(t)
				c.Text = append(c.Text, q[1:len(q)-1]...)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			c.FinishReason = *ch.FinishReason
		}
		ch.Text, ch.Delta.Content, ch.Delta.ReasoningContent, ch.Delta.Reasoning, ch.Delta.Role = "", "", "", "", ""
		ch.Delta.ToolCalls, ch.FinishReason = nil, nil
	}
	if c.Token() {
		c.Role = false
	}
	if w.Usage != nil {
		c.HasUsage = true
		c.Prompt = w.Usage.PromptTokens
		c.Completion = w.Usage.CompletionTokens
		if d := w.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
			c.Cached, c.HasCached = *d.CachedTokens, true
		}
	}
	return nil
}

// errorText renders an in-stream error object as one short line.
func errorText(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	t := string(raw)
	if len(t) > 200 {
		t = t[:200] + "…"
	}
	return t
}

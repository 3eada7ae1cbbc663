package macro

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// scanChunk is the fast path of parseChunk: a single pass over the event's
// JSON that picks out the few fields the metrics need, without allocating.
// It follows encoding/json's rules where they matter (keys match
// case-insensitively, the last of a repeated key wins, null leaves a
// string as it was), and gives up with an error on anything it does not
// understand, leaving the event to encoding/json.
func scanChunk(data []byte, c *chunk) error {
	s := jscan{b: data}
	var obj, msg []byte
	var errRaw []byte
	var choices []choiceFlags
	var ch [4]choiceFlags
	err := s.object(func(key []byte) error {
		switch {
		case keyIs(key, "choices"):
			if s.null() {
				choices = nil
				return nil
			}
			// A repeated "choices" decodes over the earlier one's elements,
			// as encoding/json does.
			old := choices
			if old == nil {
				old = ch[:0]
			}
			var err error
			choices, err = s.choices(old)
			return err
		case keyIs(key, "usage"):
			if s.null() {
				c.HasUsage, c.Prompt, c.Completion, c.Cached, c.HasCached = false, 0, 0, 0, false
				return nil
			}
			if !c.HasUsage {
				c.Prompt, c.Completion, c.Cached, c.HasCached = 0, 0, 0, false
			}
			c.HasUsage = true
			return s.usage(c)
		case keyIs(key, "error"):
			s.ws()
			start := s.i
			if !s.skip() {
				return errScan
			}
			errRaw = data[start:s.i]
		case keyIs(key, "object"):
			v, ok := s.str()
			if !ok {
				return errScan
			}
			if v != nil {
				obj = v
			}
		case keyIs(key, "message"):
			v, ok := s.str()
			if !ok {
				return errScan
			}
			if v != nil {
				msg = v
			}
		default:
			if !s.skip() {
				return errScan
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errScan
	}
	if e, ok := errorChunk(errRaw, obj, msg); ok {
		*c = e
		return nil
	}
	c.fold(choices)
	return nil
}

// errorChunk is the chunk of an event that reports an error: an "error"
// member that is not null, or an object of type "error" (its message).
func errorChunk(errRaw, obj, msg []byte) (chunk, bool) {
	if len(errRaw) > 0 && string(errRaw) != "null" {
		return chunk{Err: errorText(errRaw)}, true
	}
	if string(obj) == "error" {
		m := unquote(msg)
		if m == "" {
			m = "error event"
		}
		return chunk{Err: m}, true
	}
	return chunk{}, false
}

// choices reads a "choices" array over old's elements (a repeated key
// decodes over the earlier one's, as encoding/json does), reusing old's
// storage.
func (s *jscan) choices(old []choiceFlags) ([]choiceFlags, error) {
	out := old[:0]
	if !s.eat('[') {
		return nil, errScan
	}
	for i := 0; ; i++ {
		s.ws()
		if s.eat(']') {
			return out, nil
		}
		if i > 0 && !s.eat(',') {
			return nil, errScan
		}
		var f choiceFlags
		if i < len(old) {
			f = old[i]
		}
		if err := s.choice(&f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
}

// fold sets the chunk's fields from its choices' flags.
func (c *chunk) fold(choices []choiceFlags) {
	c.Choices = len(choices)
	for _, f := range choices {
		c.Delta = c.Delta || f.content || f.reasoning || f.reasoning2 || f.role || f.tools
		for _, t := range [...][]byte{f.textRaw, f.reasoningRaw, f.reasoning2Raw, f.contentRaw} {
			if len(t) > 0 {
				if c.Text == nil {
					c.Text = t // one piece, the common case: no copy
				} else {
					c.Text = append(c.Text[:len(c.Text):len(c.Text)], t...)
				}
			}
		}
		c.Content = c.Content || f.text || f.content || f.tools
		c.Reasoning = c.Reasoning || f.reasoning || f.reasoning2
		c.Role = c.Role || f.role
		if len(f.finish) > 0 {
			c.FinishReason = unquote(f.finish)
		}
	}
	if c.Token() {
		c.Role = false
	}
}

var errScan = errors.New("not a simple chunk")

// choiceFlags is what one choice says.
type choiceFlags struct {
	text, content, reasoning, reasoning2, role, tools bool
	finish                                            []byte // raw string body, nil when null/absent
	// The raw string bodies of the text fields (nil when null/absent).
	textRaw, contentRaw, reasoningRaw, reasoning2Raw []byte
}

func keyIs(k []byte, name string) bool { return bytes.EqualFold(k, []byte(name)) }

// unquote decodes a raw JSON string body (between the quotes). Invalid
// UTF-8 becomes U+FFFD, as encoding/json does.
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var s string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return string(raw)
	}
	return s
}

type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jscan) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// key reads `"name":` and returns name (unescaped when it had escapes).
func (s *jscan) key() ([]byte, bool) {
	k, ok := s.str()
	if !ok || k == nil || !s.eat(':') {
		return nil, false
	}
	if bytes.IndexByte(k, '\\') >= 0 {
		return []byte(unquote(k)), true
	}
	return k, true
}

// str reads a string and returns its raw body; nil (and ok) for null.
func (s *jscan) str() ([]byte, bool) {
	s.ws()
	if s.null() {
		return nil, true
	}
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			body := s.b[start:s.i]
			s.i++
			return body[:len(body):len(body)], true
		case c == '\\':
			s.i += 2
		case c < 0x20:
			return nil, false
		default:
			s.i++
		}
	}
	return nil, false
}

// skip passes over one value of any type.
func (s *jscan) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		for n := 0; ; n++ {
			s.ws()
			if s.eat(end) {
				return true
			}
			if n > 0 && !s.eat(',') {
				return false
			}
			if c == '{' {
				if _, ok := s.key(); !ok {
					return false
				}
			}
			if !s.skip() {
				return false
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, ok := s.num()
		return ok
	}
}

func (s *jscan) lit(w string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

// num reads a JSON number as written.
func (s *jscan) num() ([]byte, bool) {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	n := s.b[start:s.i]
	if len(n) == 0 {
		return nil, false
	}
	return n, true
}

// integer reads an int field the way encoding/json would, or fails.
func (s *jscan) integer() (int, bool, bool) {
	if s.null() {
		return 0, true, true // null leaves the field as it was
	}
	n, ok := s.num()
	if !ok {
		return 0, false, false
	}
	v, err := strconv.ParseInt(string(n), 10, 0)
	if err != nil || (len(n) > 1 && n[0] == '0') || (len(n) > 2 && n[0] == '-' && n[1] == '0') {
		return 0, false, false
	}
	return int(v), false, true
}

func (s *jscan) usage(c *chunk) error {
	return s.object(func(k []byte) error {
		var dst *int
		switch {
		case keyIs(k, "prompt_tokens"):
			dst = &c.Prompt
		case keyIs(k, "completion_tokens"):
			dst = &c.Completion
		case keyIs(k, "prompt_tokens_details"):
			return s.promptDetails(c)
		default:
			if !s.skip() {
				return errScan
			}
			return nil
		}
		v, null, ok := s.integer()
		if !ok {
			return errScan
		}
		if !null {
			*dst = v
		}
		return nil
	})
}

// strFlag reads a string field into a non-empty flag and, when raw is not
// nil, its raw body (null: both unchanged).
func (s *jscan) strFlag(f *bool, raw *[]byte) error {
	v, ok := s.str()
	if !ok {
		return errScan
	}
	if v != nil {
		*f = len(v) > 0
		if raw != nil {
			*raw = v
		}
	}
	return nil
}

func (s *jscan) choice(f *choiceFlags) error {
	return s.object(func(k []byte) error {
		switch {
		case keyIs(k, "text"):
			return s.strFlag(&f.text, &f.textRaw)
		case keyIs(k, "finish_reason"):
			v, ok := s.str()
			if !ok {
				return errScan
			}
			f.finish = v
		case keyIs(k, "delta"):
			if s.null() {
				return nil
			}
			return s.delta(f)
		default:
			if !s.skip() {
				return errScan
			}
		}
		return nil
	})
}

func (s *jscan) delta(f *choiceFlags) error {
	return s.object(func(k []byte) error {
		switch {
		case keyIs(k, "content"):
			return s.strFlag(&f.content, &f.contentRaw)
		case keyIs(k, "reasoning_content"):
			return s.strFlag(&f.reasoning, &f.reasoningRaw)
		case keyIs(k, "reasoning"):
			return s.strFlag(&f.reasoning2, &f.reasoning2Raw)
		case keyIs(k, "role"):
			return s.strFlag(&f.role, nil)
		case keyIs(k, "tool_calls"):
			s.ws()
			if s.null() {
				f.tools = false
				return nil
			}
			f.tools = true
			if !s.skip() {
				return errScan
			}
		default:
			if !s.skip() {
				return errScan
			}
		}
		return nil
	})
}

// object reads one JSON object, calling field with each key; field reads
// the key's value.
func (s *jscan) object(field func(k []byte) error) error {
	if !s.eat('{') {
		return errScan
	}
	for n := 0; ; n++ {
		if s.eat('}') {
			return nil
		}
		if n > 0 && !s.eat(',') {
			return errScan
		}
		k, ok := s.key()
		if !ok {
			return errScan
		}
		if err := field(k); err != nil {
			return err
		}
	}
}

// promptDetails reads the usage's prompt_tokens_details: its cached_tokens
// (null, as encoding/json does, clears what an earlier one set).
func (s *jscan) promptDetails(c *chunk) error {
	if s.null() {
		c.Cached, c.HasCached = 0, false
		return nil
	}
	return s.object(func(k []byte) error {
		if !keyIs(k, "cached_tokens") {
			if !s.skip() {
				return errScan
			}
			return nil
		}
		if s.null() {
			c.Cached, c.HasCached = 0, false
			return nil
		}
		v, _, ok := s.integer()
		if !ok {
			return errScan
		}
		c.Cached, c.HasCached = v, true
		return nil
	})
}

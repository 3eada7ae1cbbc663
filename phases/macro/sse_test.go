package macro

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// fixture reads a testdata file without its "# source:" lines.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("# ")) {
			out = append(out, l...)
		}
	}
	return out
}

// replay parses a whole stream the way the client does, with every event
// arriving at the given times (one per event, in ms), and returns the
// record.
func replay(t testing.TB, r io.Reader, at func(i int) time.Duration) (*Record, error) {
	sr := newSSEReader(r)
	var w wireChunk
	var c chunk
	var tl timeline
	tl.reset()
	rec := &Record{}
	for i := 0; ; i++ {
		data, err := sr.Next()
		if err != nil {
			return rec, err
		}
		if err := parseChunk(data, &w, &c); err != nil {
			return rec, err
		}
		if c.Done {
			break
		}
		if c.Err != "" {
			rec.Failure, rec.Error = FailErrorEvent, c.Err
			return rec, nil
		}
		tl.add(&c, at(i))
	}
	tl.finish(rec)
	return rec, nil
}

func every(d time.Duration) func(int) time.Duration {
	return func(i int) time.Duration { return time.Duration(i) * d }
}

func TestRealVLLMChatStream(t *testing.T) {
	for _, name := range []string{"whole", "one byte at a time"} {
		t.Run(name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(fixture(t, "vllm-chat-stream.txt"))
			if name != "whole" {
				r = iotest.OneByteReader(r)
			}
			rec, err := replay(t, r, every(10*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			// Event 0 is the role-only chunk at 0 ms: TTFT is the first
			// content chunk at 10 ms, not 0.
			if rec.ttft != 10*time.Millisecond || rec.e2el != 50*time.Millisecond {
				t.Errorf("ttft %v e2el %v, want 10ms and 50ms", rec.ttft, rec.e2el)
			}
			if rec.OutputTokens != 5 || rec.TokenSource != SourceFinal || rec.InputTokens != 6421 {
				t.Errorf("tokens %d from %s, input %d; want 5 from final_usage, 6421", rec.OutputTokens, rec.TokenSource, rec.InputTokens)
			}
			if rec.tpot != 10*time.Millisecond {
				t.Errorf("tpot %v, want 10ms", rec.tpot)
			}
		})
	}
}

func TestSSEFraming(t *testing.T) {
	in := ": ping\r\n\r\nevent: message\r\nid: 7\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n" +
		"data:{\"choices\":[{\"text\":\"b\"}]}\n\n" +
		"data: {\"choices\":\ndata: []}\n\n" + // multi-line data joins with \n
		"retry: 10\n\n" + // no data: skipped
		"data: [DONE]\n\n"
	sr := newSSEReader(iotest.HalfReader(strings.NewReader(in)))
	var got []string
	for {
		d, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	want := []string{`{"choices":[{"text":"a"}]}`, `{"choices":[{"text":"b"}]}`, "{\"choices\":\n[]}", "[DONE]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestSSECutMidEvent(t *testing.T) {
	sr := newSSEReader(strings.NewReader("data: {\"choices\":[]}\n\ndata: {\"choi"))
	if _, err := sr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := sr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut inside an event: err %v, want unexpected EOF", err)
	}
}

func TestChunkKinds(t *testing.T) {
	cases := []struct {
		data string
		want chunk
	}{
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, chunk{Choices: 1, Role: true, Delta: true}},
		{`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, chunk{Choices: 1, Reasoning: true, Delta: true, Text: []byte("hm")}},
		{`{"choices":[{"delta":{"reasoning":"h\"m"}}]}`, chunk{Choices: 1, Reasoning: true, Delta: true, Text: []byte(`h\"m`)}},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, chunk{Choices: 1, Content: true, Delta: true}},
		{`{"choices":[{"text":" x","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
			chunk{Choices: 1, Content: true, FinishReason: "length", HasUsage: true, Prompt: 3, Completion: 9, Text: []byte(" x")}},
		{`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}`, chunk{HasUsage: true, Prompt: 3, Completion: 9}},
		{`{"error":{"object":"error","message":"boom","code":500}}`, chunk{Err: "boom"}},
		{`{"object":"error","message":"bad","code":400}`, chunk{Err: "bad"}},
		{`{"error":"plain"}`, chunk{Err: "plain"}},
		{`{"choices":[{"text":"a"}],"error":null}`, chunk{Choices: 1, Content: true, Text: []byte("a")}},
		{` [DONE] `, chunk{Done: true}},
	}
	var w wireChunk
	for _, c := range cases {
		var got chunk
		if err := parseChunk([]byte(c.data), &w, &got); err != nil {
			t.Errorf("%s: %v", c.data, err)
			continue
		}
		if !sameChunk(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.data, got, c.want)
		}
	}
	// The reused wire struct must not leak fields between events.
	var got chunk
	_ = parseChunk([]byte(`{"choices":[{"delta":{"content":"x","role":"assistant"}}]}`), &w, &got)
	_ = parseChunk([]byte(`{"choices":[{"delta":{}}]}`), &w, &got)
	if got.Token() || got.Role {
		t.Errorf("stale fields after reuse: %+v", got)
	}
}

// TestContinuousUsageITL: per-chunk usage splits each gap over the tokens
// that chunk carried (speculative decoding sends several per chunk).
func TestContinuousUsageITL(t *testing.T) {
	in := `data: {"choices":[{"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":10,"completion_tokens":0}}

data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}

data: {"choices":[{"delta":{"content":"b c d"}}],"usage":{"prompt_tokens":10,"completion_tokens":4}}

data: {"choices":[{"delta":{"content":"e f"}}],"usage":{"prompt_tokens":10,"completion_tokens":6}}

data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":6}}

data: [DONE]

`
	rec, err := replay(t, strings.NewReader(in), every(12*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec.TokenSource != SourceContinuous || rec.OutputTokens != 6 {
		t.Fatalf("source %s tokens %d", rec.TokenSource, rec.OutputTokens)
	}
	// TTFT at event 1 (12ms), last token at event 3 (36ms): TPOT 24/5 ms.
	if rec.ttft != 12*time.Millisecond || rec.tpot != 24*time.Millisecond/5 {
		t.Errorf("ttft %v tpot %v", rec.ttft, rec.tpot)
	}
	want := []itlSample{{4 * time.Millisecond, 3}, {6 * time.Millisecond, 2}}
	if len(rec.itl) != 2 || rec.itl[0] != want[0] || rec.itl[1] != want[1] {
		t.Errorf("itl %v, want %v", rec.itl, want)
	}
}

func TestNoUsageCountsChunks(t *testing.T) {
	in := "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n"
	rec, err := replay(t, strings.NewReader(in), every(time.Millisecond))
	if err != nil || rec.TokenSource != SourceChunks || rec.OutputTokens != 2 {
		t.Errorf("err %v source %s tokens %d", err, rec.TokenSource, rec.OutputTokens)
	}
}

func TestStreamWithoutDone(t *testing.T) {
	in := "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
	if _, err := replay(t, strings.NewReader(in), every(time.Millisecond)); err != io.EOF {
		t.Errorf("a stream ending without [DONE] gives %v, want EOF (a cut)", err)
	}
}

func FuzzSSE(f *testing.F) {
	f.Add(fixture(f, "vllm-chat-stream.txt"))
	f.Add([]byte(": ping\r\n\r\ndata: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":1}}\r\n\r\ndata: [DONE]\r\n\r\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":null,\"reasoning_content\":\"r\"}}]}\n\ndata: {\"choi"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":5}}\n\ndata: {\"choices\":[{\"text\":\"b\"}],\"usage\":{\"completion_tokens\":2}}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, _ := replay(t, bytes.NewReader(b), every(time.Millisecond))
		if rec.Failure == "" && rec.OutputTokens > 1 && rec.tpot < 0 {
			t.Errorf("negative TPOT %v", rec.tpot)
		}
		for _, s := range rec.itl {
			if s.tokens < 1 {
				t.Errorf("ITL sample with %d tokens", s.tokens)
			}
		}
	})
}

// FuzzScanChunk checks the fast scanner against encoding/json: whenever
// both accept an event they must read the same thing from it.
func FuzzScanChunk(f *testing.F) {
	for _, l := range bytes.Split(fixture(f, "vllm-chat-stream.txt"), []byte("\n")) {
		if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			f.Add(d)
		}
	}
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":10,"completion_tokens":0}}`,
		`{"choices":[{"text":" x","finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
		`{"choices":[{"delta":{"reasoning_content":"hm","tool_calls":null}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`,
		`{"error":{"object":"error","message":"boom","code":500}}`,
		`{"object":"error","message":"b\u0061d"}`,
		`{"Choices":[{"TEXT":"a"}],"choices":[{"finish_reason":"st\"op"}],"usage":null}`,
		`{"usage":{"completion_tokens":-0,"prompt_tokens":null},"usage":{"prompt_tokens":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, std chunk
		errFast := scanChunk(b, &fast)
		var w wireChunk
		errStd := parseChunkStd(b, &w, &std)
		if errFast == nil && errStd == nil && !sameChunk(fast, std) {
			t.Errorf("%s:\nfast %+v\n std %+v", b, fast, std)
		}
	})
}

// sameChunk compares two chunks, their text decoded (the fast scanner keeps
// it as written, encoding/json re-escapes it).
func sameChunk(a, b chunk) bool {
	ta, tb := unquote(a.Text), unquote(b.Text)
	a.Text, b.Text = nil, nil
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b) && ta == tb
}

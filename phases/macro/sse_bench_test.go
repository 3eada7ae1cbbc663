package macro

import (
	"testing"
	"time"
)

// loopReader repeats one event forever.
type loopReader struct {
	ev  []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.ev[l.off:])
		n += c
		l.off = (l.off + c) % len(l.ev)
	}
	return n, nil
}

// BenchmarkSSEParse is the client's per-event work: frame one SSE event,
// decode its JSON, and account its tokens. One op is one event.
func BenchmarkSSEParse(b *testing.B) {
	for _, tc := range []struct{ name, ev string }{
		{"completions", `data: {"id":"cmpl-9f0e1d2c3b4a","object":"text_completion","created":1727154331,"model":"moonshotai/Kimi-K2.5","choices":[{"index":0,"text":" serene","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":256,"total_tokens":300,"completion_tokens":44}}` + "\n\n"},
		{"chat", `data: {"id":"chatcmpl-9f0e1d2c3b4a","object":"chat.completion.chunk","created":1727154331,"model":"moonshotai/Kimi-K2.5","choices":[{"index":0,"delta":{"content":" serene"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":256,"total_tokens":300,"completion_tokens":44}}` + "\n\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sr := newSSEReader(&loopReader{ev: []byte(tc.ev)})
			var w wireChunk
			var c chunk
			var tl timeline
			tl.reset()
			b.SetBytes(int64(len(tc.ev)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				data, err := sr.Next()
				if err != nil {
					b.Fatal(err)
				}
				if err := parseChunk(data, &w, &c); err != nil {
					b.Fatal(err)
				}
				tl.add(&c, time.Duration(i))
				if len(tl.at) == 4096 {
					tl.reset()
				}
			}
		})
	}
}

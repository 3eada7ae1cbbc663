package macro

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkParseStream is a whole response through the client's stream
// loop, as a request reads it: SSE framing, JSON, the timeline, the read
// counting and the record at the end. One op is one token event; the body
// is 4096 one-token events with continuous usage, then the final usage and
// [DONE].
func BenchmarkParseStream(b *testing.B) {
	const events = 4096
	var body bytes.Buffer
	for i := 1; i <= events; i++ {
		fmt.Fprintf(&body, `data: {"id":"cmpl-9f0e1d2c3b4a","object":"text_completion","created":1727154331,"model":"m","choices":[{"index":0,"text":" serene","logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":256,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 256+i, i)
	}
	body.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":256,"total_tokens":4352,"completion_tokens":4096}}` + "\n\ndata: [DONE]\n\n")
	c := newClient(Config{URL: "http://127.0.0.1:1"}, 1)
	st := new(reqState)
	ctx := context.Background()
	rec := new(Record)
	r := bytes.NewReader(body.Bytes())
	b.SetBytes(int64(body.Len() / events))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += events {
		r.Reset(body.Bytes())
		*rec = Record{itl: rec.itl[:0], chunkGaps: rec.chunkGaps[:0]}
		c.stream(ctx, ctx, rec, st, r, time.Now(), nil)
		if rec.Failure != "" || rec.OutputTokens != events {
			b.Fatalf("%s %s, %d tokens", rec.Failure, rec.Error, rec.OutputTokens)
		}
	}
}

package macro

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTraceSamplesParse(t *testing.T) {
	for _, c := range []struct {
		format, file string
		n, block     int
	}{
		{TraceMooncake, "testdata/trace_mooncake.jsonl", 24, MooncakeBlock},
		{TraceBailian, "testdata/trace_bailian.jsonl", 20, BailianBlock},
		{TraceBurstGPT, "testdata/trace_burstgpt.csv", 19, 0}, // one failed request has no tokens
	} {
		tr, err := ReadTrace(c.format, c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(tr.Requests) != c.n || tr.BlockSize != c.block || tr.Requests[0].At != 0 {
			t.Errorf("%s: %d requests, block %d, first at %v", c.file, len(tr.Requests), tr.BlockSize, tr.Requests[0].At)
		}
		for i := 1; i < len(tr.Requests); i++ {
			if tr.Requests[i].At < tr.Requests[i-1].At {
				t.Fatalf("%s: request %d out of order", c.file, i)
			}
		}
	}
}

func TestTraceTimesAndUnits(t *testing.T) {
	moon, err := ParseTrace(TraceMooncake, "m", strings.NewReader(`{"timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}
{"timestamp": 3500, "input_length": 10, "hash_ids": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := moon.Requests[1].At; got != 2500*time.Millisecond || moon.Requests[1].OutputLen != 1 {
		t.Errorf("mooncake: second at %v (want 2.5s), output %d", got, moon.Requests[1].OutputLen)
	}
	bl, err := ParseTrace(TraceBailian, "b", strings.NewReader(`{"chat_id":1,"parent_chat_id":-1,"timestamp":1.5,"input_length":20,"output_length":3,"type":"text","turn":1,"hash_ids":[4,5]}
{"chat_id":2,"parent_chat_id":1,"timestamp":4.0,"input_length":20,"output_length":3,"type":"text","turn":2,"hash_ids":[4,5]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := bl.Requests[1].At; got != 2500*time.Millisecond {
		t.Errorf("bailian: second at %v, want 2.5s (seconds)", got)
	}
}

// BurstGPT's failed requests (no response tokens, the dataset's README
// says; or no request tokens) are left out, as its "without fails" files
// leave them; the others keep their lengths.
func TestBurstGPTSkipsFailedRequests(t *testing.T) {
	tr, err := ParseTrace(TraceBurstGPT, "b", strings.NewReader(`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
1,ChatGPT,300,20,320,Conversation log
2,GPT-4,450,0,450,API log
3,ChatGPT,0,0,0,Conversation log
4.5,ChatGPT,120,1,121,API log
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 2 || tr.Requests[1].At != 3500*time.Millisecond || tr.Requests[0].OutputLen != 20 || tr.Requests[1].OutputLen != 1 {
		t.Fatalf("requests %+v: want the rows at 1 s and 4.5 s", tr.Requests)
	}
}

func TestTraceBadInputNamesFileAndLine(t *testing.T) {
	for _, c := range []struct{ format, text, want string }{
		{TraceMooncake, "{\"timestamp\":0,\"input_length\":5}\n{\"timestamp\":-3,\"input_length\":5}\n", "f:2: timestamp -3"},
		{TraceMooncake, "{\"timestamp\":0,\"input_length\":5}\n\nnot json\n", "f:3: not a JSON object"},
		{TraceMooncake, "{\"timestamp\":0,\"input_length\":100,\"hash_ids\":[1,2]}\n", "f:1: 2 hash_ids for an input of 100 tokens"},
		{TraceMooncake, "{\"input_length\":5}\n", "f:1: timestamp and input_length are required"},
		{TraceBailian, "{\"timestamp\":0,\"input_length\":1.5}\n", "f:1: input_length 1.5"},
		{TraceBurstGPT, "Timestamp,Model,Request tokens\n", "f:1: no \"Response tokens\" column"},
		{TraceBurstGPT, "Timestamp,Request tokens,Response tokens\n1,2,3\nx,2,3\n", "f:3: Timestamp \"x\": not a number"},
		{TraceBurstGPT, "Timestamp,Request tokens,Response tokens\n", "f: no requests in the trace"},
	} {
		_, err := ParseTrace(c.format, "f", strings.NewReader(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line starting %q", c.text, err, c.want)
		}
	}
}

func TestTracePromptsShareEqualBlocks(t *testing.T) {
	p := newTracePrompts(4, 7)
	a := p.prompt(0, TraceRequest{InputLen: 10, HashIDs: []int64{1, 2, 3}})
	b := p.prompt(1, TraceRequest{InputLen: 12, HashIDs: []int64{1, 2, 9}})
	c := p.prompt(2, TraceRequest{InputLen: 8, HashIDs: []int64{5, 2}})
	wa, wb, wc := strings.Fields(a), strings.Fields(b), strings.Fields(c)
	if len(wa) != 10 || len(wb) != 12 || len(wc) != 8 {
		t.Fatalf("lengths %d %d %d, want 10 12 8", len(wa), len(wb), len(wc))
	}
	if strings.Join(wa[:8], " ") != strings.Join(wb[:8], " ") {
		t.Error("ids 1, 2: the first 8 words differ")
	}
	if strings.Join(wa[8:], " ") == strings.Join(wb[8:12], " ")[:len(strings.Join(wa[8:], " "))] && strings.Join(wb[8:], " ") == strings.Join(wa[8:], " ") {
		t.Error("ids 3 and 9 gave the same words")
	}
	if strings.Join(wc[:4], " ") == strings.Join(wa[:4], " ") {
		t.Error("ids 5 and 1 gave the same block")
	}
	if strings.Join(wc[4:], " ") != strings.Join(wa[4:8], " ") {
		t.Error("id 2 in another place gave other words")
	}
}

func TestImpliedReuseHandWorked(t *testing.T) {
	// Blocks of 10: request 1 is all new (25 tokens); request 2 [1 2 4]
	// reuses 1, 2 (20 of 30); request 3 [5 2] reuses nothing (2 follows
	// a new block); request 4 [1 2 3] reuses 1, 2 and the 5 tokens of 3
	// that request 1 sent (25 of 30). 45 of 25+30+20+30.
	reqs := []TraceRequest{
		{InputLen: 25, HashIDs: []int64{1, 2, 3}},
		{InputLen: 30, HashIDs: []int64{1, 2, 4}},
		{InputLen: 20, HashIDs: []int64{5, 2}},
		{InputLen: 30, HashIDs: []int64{1, 2, 3}},
	}
	if got, want := ImpliedReuse(reqs, 10, 1), 45.0/105; got != want {
		t.Errorf("reuse %g, want %g", got, want)
	}
	// In whole cache blocks of 8 tokens: 20 shared is 16, 25 is 24.
	if got, want := ImpliedReuse(reqs, 10, 8), 40.0/105; got != want {
		t.Errorf("reuse in blocks of 8: %g, want %g", got, want)
	}
}

func TestTraceWindowCutsAndScales(t *testing.T) {
	var reqs []TraceRequest
	for i := range 10 {
		reqs = append(reqs, TraceRequest{At: time.Duration(i) * time.Second, InputLen: 1})
	}
	got := TraceWindow{Start: 2 * time.Second, Dur: 4 * time.Second, Speed: 2}.Cut(reqs)
	if len(got) != 4 || got[0].At != 0 || got[3].At != 1500*time.Millisecond || reqs[2].At != 2*time.Second {
		t.Errorf("cut: %d requests, %v", len(got), got)
	}
	// A window opening 0.6 s before its first request (at 3 s) replays
	// from that request: 3, 4, 5 s at 1× are 0, 1, 2 s.
	got = TraceWindow{Start: 2400 * time.Millisecond, Dur: 3 * time.Second}.Cut(reqs)
	if len(got) != 3 || got[0].At != 0 || got[2].At != 2*time.Second {
		t.Errorf("cut from 2.4s: %d requests, %v", len(got), got)
	}
}

// TestReplayKeepsTheTraceTimes replays the sample trace at 4× and checks
// each send against its time: within 1% of the span or the delay said.
func TestReplayKeepsTheTraceTimes(t *testing.T) {
	tr, err := ReadTrace(TraceMooncake, "testdata/trace_mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	reqs := TraceWindow{Speed: 4}.Cut(tr.Requests)
	span := reqs[len(reqs)-1].At
	var mu sync.Mutex
	sent := make([]time.Duration, len(reqs))
	start := time.Now()
	st := replayTrace(context.Background(), reqs, func(i int, _ time.Time) {
		mu.Lock()
		sent[i] = time.Since(start)
		mu.Unlock()
	})
	if st.Requests != len(reqs) {
		t.Fatalf("%d sends of %d", st.Requests, len(reqs))
	}
	tol := max(span/100, time.Duration(st.MaxDelayMs*float64(time.Millisecond))+time.Millisecond)
	for i, r := range reqs {
		if d := sent[i] - r.At; d < -time.Millisecond || d > tol {
			t.Errorf("request %d sent at %v, due %v (tolerance %v, max delay said %.2f ms)", i, sent[i], r.At, tol, st.MaxDelayMs)
		}
	}
	if want := float64(len(reqs)-1) / span.Seconds(); st.ScheduledRate < want*0.99 || st.ScheduledRate > want*1.01 {
		t.Errorf("scheduled rate %g, want %g", st.ScheduledRate, want)
	}
}

// The second request shares 20 tokens with the first: 16 of them in
// whole cache blocks, of the window's 50.
func TestTraceSummaryOfAWindow(t *testing.T) {
	tr := &Trace{Format: TraceMooncake, BlockSize: 10, Requests: []TraceRequest{
		{At: 0, InputLen: 20, OutputLen: 3, HashIDs: []int64{1, 2}},
		{At: 2 * time.Second, InputLen: 20, OutputLen: 5, HashIDs: []int64{1, 2}},
		{At: 4 * time.Second, InputLen: 10, OutputLen: 1, HashIDs: []int64{3}},
	}}
	w := TraceWindow{Speed: 2}
	s := tr.Summarize(w, w.Cut(tr.Requests))
	if s.Requests != 3 || s.SpanSeconds != 2 || s.MeanRate != 1 || s.InputTokens != 50 || s.OutputTokens != 9 || s.DistinctBlock != 3 || s.ImpliedReuse != 16.0/50 {
		t.Errorf("summary %+v", s)
	}
}

// Within a minute the peak is the mean: 3 gaps over 2 s. Over a longer
// trace it is the busiest minute: 90 requests in the first minute (then
// one a minute) is 1.5 req/s.
func TestPeakRateHandWorked(t *testing.T) {
	short := []TraceRequest{{At: 0}, {At: time.Second}, {At: 1500 * time.Millisecond}, {At: 2 * time.Second}}
	if got := PeakRate(short); got != 1.5 {
		t.Errorf("short trace: %g req/s, want 1.5", got)
	}
	var long []TraceRequest
	for i := range 90 {
		long = append(long, TraceRequest{At: time.Duration(i) * 600 * time.Millisecond})
	}
	for i := 1; i <= 5; i++ {
		long = append(long, TraceRequest{At: time.Duration(i) * 2 * time.Minute})
	}
	if got := PeakRate(long); got != 1.5 {
		t.Errorf("long trace: %g req/s, want 1.5", got)
	}
	if DetectTraceFormat("testdata/trace_bailian.jsonl") != TraceBailian || DetectTraceFormat("testdata/trace_mooncake.jsonl") != TraceMooncake ||
		DetectTraceFormat("testdata/trace_burstgpt.csv") != TraceBurstGPT {
		t.Error("formats not told apart")
	}
}

// A trace feed replays its window at another speed by scaling its gaps;
// its speed ladder doubles from the window's speed while the window lasts
// a second or more, and the rate a speed
// names is the window's mean rate at 1× times the speed.
func TestTraceFeedSpeeds(t *testing.T) {
	cfg := Complete(Config{URL: "http://127.0.0.1:1", Dataset: TraceMooncake, DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 2})
	if err := cfg.traceLevel(); err != nil {
		t.Fatal(err)
	}
	f := cfg.trace
	// 8× would replay the 6.5 s window in 0.8 s: one burst, past the ladder.
	if got := f.speedLadder(3); len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("ladder %v", got)
	}
	gap1 := f.restart(2).gap()
	gap4 := f.restart(8).gap()
	if gap1 != (192-69)*time.Millisecond/2 || gap4 != gap1/4 {
		t.Fatalf("gaps %v at 2×, %v at 8×", gap1, gap4)
	}
	span := (6590 - 69) / 1000.0
	if want := 23 / span * 8; math.Abs(f.rateAt(8)-want) > 0.001*want || cfg.Rate != f.rateAt(2) {
		t.Fatalf("rate at 8× %g, want %g; level rate %g", f.rateAt(8), want, cfg.Rate)
	}
	cfg.trace, cfg.Search = nil, "rate"
	if err := cfg.traceLevel(); err == nil || !strings.Contains(err.Error(), "--search speed") {
		t.Fatalf("a rate search over a trace: %v", err)
	}
}

package vllmemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func startTestEmu(t *testing.T, cfg Config) (*Emulator, string) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	e := New(cfg)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		e.Close()
	})
	return e, srv.URL
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads a whole SSE body into its data payloads.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

type testChunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
}

// chatChunks streams one chat completion of 8 tokens and returns its
// chunks (without [DONE]) and the tokens each token chunk carried.
func chatChunks(t *testing.T, url string) ([]testChunk, []int) {
	t.Helper()
	resp := post(t, url+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"one two three"}],
		"max_completion_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := events(t, resp.Body)
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %q", evs[len(evs)-1])
	}
	var chunks []testChunk
	for _, e := range evs[:len(evs)-1] {
		var c testChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		chunks = append(chunks, c)
	}
	var per []int
	prev := 0
	for _, c := range chunks[1 : len(chunks)-1] {
		per = append(per, c.Usage.Completion-prev)
		prev = c.Usage.Completion
	}
	return chunks, per
}

func TestEmulatorChatStream(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: 20 * time.Millisecond, TokensPerStep: 3, ReasoningTokens: 2})
	// 8 tokens: 1 from prefill, then steps of 3, 3, 1 (the last one capped).
	// A step the writer is late for goes out merged with the next (the
	// engine keeps its clock), so a busy machine gets a few tries.
	var chunks []testChunk
	var per []int
	for try := 0; try < 5; try++ {
		if chunks, per = chatChunks(t, url); jsonInts(per) == "[1,3,3,1]" {
			break
		}
	}
	if jsonInts(per) != "[1,3,3,1]" {
		t.Fatalf("tokens per chunk %v, want 1,3,3,1 (in 5 tries)", per)
	}
	first := chunks[0]
	if first.Object != "chat.completion.chunk" || first.Choices[0].Delta.Role != "assistant" || first.Usage == nil || first.Usage.Completion != 0 {
		t.Errorf("first chunk is not role-only with zero usage: %+v", first)
	}
	if chunks[1].Choices[0].Delta.ReasoningContent == "" || chunks[3].Choices[0].Delta.Content == nil {
		t.Errorf("reasoning then content expected: %+v %+v", chunks[1], chunks[3])
	}
	last := chunks[len(chunks)-2]
	if fr := last.Choices[0].FinishReason; fr == nil || *fr != "length" {
		t.Errorf("last token chunk finish_reason %v", fr)
	}
	final := chunks[len(chunks)-1]
	if len(final.Choices) != 0 || final.Usage == nil || final.Usage.Completion != 8 || final.Usage.Prompt != 3+4 || final.Usage.Total != 15 {
		t.Errorf("final usage chunk %+v", final)
	}
}

func jsonInts(v []int) string { b, _ := json.Marshal(v); return string(b) }

func TestEmulatorCompletionsWithoutContinuousUsage(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: 20 * time.Millisecond})
	var evs []string
	for try := 0; try < 5 && len(evs) != 6; try++ { // a late writer merges steps, as above
		resp := post(t, url+"/v1/completions", `{"model":"m","prompt":"a b","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`)
		evs = events(t, resp.Body)
		resp.Body.Close()
	}
	if len(evs) != 6 || evs[5] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	for i, e := range evs[:4] {
		var c testChunk
		_ = json.Unmarshal([]byte(e), &c)
		if c.Object != "text_completion" || c.Usage != nil || c.Choices[0].Text == nil || *c.Choices[0].Text == "" {
			t.Errorf("token chunk %d: %s", i, e)
		}
	}
	if !strings.Contains(evs[4], `"choices":[],"usage":{"prompt_tokens":2,"total_tokens":6,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}`) {
		t.Errorf("final usage %s", evs[4])
	}
}

func TestEmulatorNonStreaming(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: time.Millisecond})
	resp := post(t, url+"/v1/completions", `{"model":"m","prompt":"a b c","max_tokens":5}`)
	defer resp.Body.Close()
	var out struct {
		Choices []struct{ Text string }
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Usage.CompletionTokens != 5 || len(strings.Fields(out.Choices[0].Text)) != 5 {
		t.Errorf("non-streaming answer %+v %v", out, err)
	}
}

func TestEmulatorRejects(t *testing.T) {
	_, url := startTestEmu(t, Config{MaxModelLen: 100})
	cases := []struct {
		path, body string
		code       int
	}{
		{"/v1/completions", `{"model":"other","prompt":"a","max_tokens":1}`, 404},
		{"/v1/completions", `{"model":"m","prompt":"a","max_tokens":100}`, 400},
		{"/v1/completions", `{"model":`, 400},
		{"/v1/nothing", `{}`, 404},
	}
	for _, c := range cases {
		resp := post(t, url+c.path, c.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !bytes.Contains(b, []byte(`"object":"error"`)) {
			t.Errorf("%s %s: %d %s", c.path, c.body, resp.StatusCode, b)
		}
	}
}

func TestEmulatorReady(t *testing.T) {
	e, url := startTestEmu(t, Config{NotReady: true, StepTime: 5 * time.Millisecond})
	get := func(p string) int {
		r, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	body := `{"model":"m","prompt":"a","max_tokens":400,"stream":true}`
	if get("/health") != 503 || post(t, url+"/v1/completions", body).StatusCode != 503 {
		t.Fatal("not-ready emulator must answer 503")
	}
	e.SetReady(true)
	if get("/health") != 200 {
		t.Fatal("ready emulator: /health not 200")
	}
	// Going not ready cuts the streams in flight.
	resp := post(t, url+"/v1/completions", body)
	time.Sleep(30 * time.Millisecond)
	e.SetReady(false)
	b, err := io.ReadAll(resp.Body)
	if err == nil || bytes.Contains(b, []byte("[DONE]")) {
		t.Errorf("stream not cut: err %v, %d bytes", err, len(b))
	}
}

// metric reads one series' value from /metrics text.
func metric(text, name string) (float64, bool) {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, `engine="0"`) {
			var v float64
			f := strings.Fields(l)
			if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}

func TestEmulatorMetricsMoveWithLoad(t *testing.T) {
	// 40 ms steps: the first four requests run 1.2 s, so the scrape after
	// the state check still sees them on a loaded machine.
	e, url := startTestEmu(t, Config{StepTime: 40 * time.Millisecond, MaxNumSeqs: 4, TokensPerStep: 2, SpecAcceptRate: 0.5})
	scrape := func() string {
		r, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	idle := scrape()
	if v, ok := metric(idle, "vllm:num_requests_running"); !ok || v != 0 {
		t.Fatalf("idle running %v %v\n%s", v, ok, idle)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(t, url+"/v1/completions", `{"model":"m","prompt":"a b c d","max_tokens":60,"stream":true}`)
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	// Wait for all six to arrive (four running, two waiting): on a busy
	// machine the last posts may reach the server after the batch is full.
	for st := e.State(); (st.Running < 4 || st.Waiting < 2) && time.Now().Before(deadline); st = e.State() {
		time.Sleep(2 * time.Millisecond)
	}
	busy := scrape()
	run, _ := metric(busy, "vllm:num_requests_running")
	wait, _ := metric(busy, "vllm:num_requests_waiting")
	kv, _ := metric(busy, "vllm:kv_cache_usage_perc")
	if run != 4 || wait != 2 || kv <= 0 {
		t.Errorf("busy: running %v waiting %v kv %v", run, wait, kv)
	}
	wg.Wait()
	// The gauge follows the engine's step, which may book a request's end
	// a moment after its last chunk reached the client (as vLLM's does).
	after := scrape()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); after = scrape() {
		if run, _ := metric(after, "vllm:num_requests_running"); run == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if run, _ := metric(after, "vllm:num_requests_running"); run != 0 {
		t.Errorf("running %v 2 s after all finished", run)
	}
	gen, _ := metric(after, "vllm:generation_tokens_total")
	prompt, _ := metric(after, "vllm:prompt_tokens_total")
	acc, okA := metric(after, "vllm:spec_decode_num_accepted_tokens_total")
	draft, okD := metric(after, "vllm:spec_decode_num_draft_tokens_total")
	ttft, okT := metric(after, "vllm:time_to_first_token_seconds_count")
	if gen != 360 || prompt != 24 || !okA || !okD || acc <= 0 || acc >= draft || !okT || ttft != 6 {
		t.Errorf("after: gen %v prompt %v accepted %v/%v ttft count %v", gen, prompt, acc, draft, ttft)
	}
}

// TestEmulatorPreemption: when the KV cache fills, the newest requests go
// back to waiting (vLLM recomputes them) and still finish whole.
func TestEmulatorPreemption(t *testing.T) {
	e, url := startTestEmu(t, Config{StepTime: time.Millisecond, KVCacheTokens: 120, CoarseTiming: true})
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(t, url+"/v1/completions", `{"model":"m","prompt":"a b c d e f g h i j","max_tokens":40,"stream":true,"stream_options":{"include_usage":true}}`)
			defer r.Body.Close()
			evs := events(t, r.Body)
			if len(evs) >= 2 {
				var c testChunk
				_ = json.Unmarshal([]byte(evs[len(evs)-2]), &c)
				if c.Usage != nil {
					counts[i] = c.Usage.Completion
				}
			}
		}()
	}
	wg.Wait()
	st := e.State()
	if st.Preemptions == 0 || st.Succeeded != 4 {
		t.Errorf("preemptions %d, finished %d; want some preemptions and 4 finished", st.Preemptions, st.Succeeded)
	}
	for i, n := range counts {
		if n != 40 {
			t.Errorf("request %d: %d tokens, want 40", i, n)
		}
	}
}

// After a relaunch with a cap of 2 and two draft tokens always accepted,
// five requests run two at a time (three wait) and every draft token is
// accepted: 5 × 30 tokens generated.
func TestEmulatorRelaunch(t *testing.T) {
	e, url := startTestEmu(t, Config{StepTime: 40 * time.Millisecond, MaxNumSeqs: 8})
	e.Relaunch(Config{StepTime: 40 * time.Millisecond, MaxNumSeqs: 2, TokensPerStep: 3})
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(t, url+"/v1/completions", `{"model":"m","prompt":"a b","max_tokens":30,"stream":true}`)
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	st := e.State()
	for ; st.Running+st.Waiting < 5 && time.Now().Before(deadline); st = e.State() {
		time.Sleep(2 * time.Millisecond)
	}
	if st.Running != 2 || st.Waiting != 3 {
		t.Errorf("running %d waiting %d, want 2 and 3", st.Running, st.Waiting)
	}
	wg.Wait()
	// A step's counters are taken after its tokens are sent: the last
	// step's may come just after the clients have read their last token.
	var b []byte
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(r.Body)
		r.Body.Close()
		if gen, _ := metric(string(b), "vllm:generation_tokens_total"); gen >= 150 || time.Now().After(end) {
			break
		}
	}
	gen, _ := metric(string(b), "vllm:generation_tokens_total")
	acc, okA := metric(string(b), "vllm:spec_decode_num_accepted_tokens_total")
	draft, _ := metric(string(b), "vllm:spec_decode_num_draft_tokens_total")
	if gen != 150 || !okA || acc <= 0 || acc != draft {
		t.Errorf("generated %v, accepted %v of %v drafts", gen, acc, draft)
	}
}

// With three drafts each accepted in turn at 0.7, a decode step accepts
// 0.7 + 0.7² + 0.7³ = 1.533 drafts on average: the mean over one long
// answer's steps is within 0.15 of it.
func TestEmulatorSpecAcceptedLength(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: time.Millisecond, StepPerSeq: time.Microsecond, TokensPerStep: 4, SpecAcceptRate: 0.7})
	r := post(t, url+"/v1/completions", `{"model":"m","prompt":"a","max_tokens":1200,"stream":true}`)
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	m, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(m.Body)
	m.Body.Close()
	acc, _ := metric(string(b), "vllm:spec_decode_num_accepted_tokens_total")
	drafts, _ := metric(string(b), "vllm:spec_decode_num_drafts_total")
	want := 0.7 + 0.7*0.7 + 0.7*0.7*0.7
	if drafts < 100 || math.Abs(acc/drafts-want) > 0.15 {
		t.Errorf("accepted %v over %v steps: %.3f a step, want %.3f", acc, drafts, acc/drafts, want)
	}
	t.Logf("accepted %.3f drafts a step over %v steps (%.3f tokens a step)", acc/drafts, drafts, 1+acc/drafts)
}

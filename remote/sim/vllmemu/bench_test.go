package vllmemu

import (
	"testing"
	"time"
)

// BenchmarkEmulatorStep is one engine step of 128 running requests: the
// scheduler's work between two step deadlines.
func BenchmarkEmulatorStep(b *testing.B) {
	e := New(Config{})
	defer e.Close()
	now := time.Now()
	running := make([]*emuReq, 128)
	for i := range running {
		running[i] = newEmuReq(64, 1<<30, now)
	}
	kv := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		running, kv = e.step(running, now, kv, 0)
	}
}

// A step's iteration tokens are what vLLM counts (IterationStats): the
// whole prompt of a request whose prefill ended in the step, and every
// token generated, the first one included.
func TestIterationTokensCountPrefill(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	now := time.Now()
	r := newEmuReq(100, 5, now)
	running := []*emuReq{r}
	kv := 100                                   // admitted: its prompt in the KV cache
	running, kv = e.step(running, now, kv, 100) // the prefill step: 100 prompt tokens, the first token
	for range 4 {
		now = now.Add(time.Millisecond)
		running, kv = e.step(running, now, kv, 0)
	}
	e.mu.Lock()
	sum, n, prompt := e.st.iterTokens.sum, e.st.iterTokens.n, e.st.state.PromptTokens
	e.mu.Unlock()
	if prompt != 100 {
		t.Errorf("prompt tokens %d, want 100", prompt)
	}
	if sum != 105 || n != 5 {
		t.Errorf("iteration tokens: %v over %d steps, want 105 (100 prompt + 5 generated) over 5", sum, n)
	}
	if len(running) != 0 || kv != 0 {
		t.Errorf("left %d running, kv %d", len(running), kv)
	}
}

package macro_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestFaultsCountedExactly: every fault the emulator injects is one failed
// request of the right reason, and none is counted as completed.
func TestFaultsCountedExactly(t *testing.T) {
	t.Parallel()
	cfg := vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true,
		FailureRate: 0.1, CutRate: 0.1, ErrorAfter200Rate: 0.1, Seed: 7}
	emu, url := startEmu(t, cfg)
	var jsonl bytes.Buffer
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{8}, Requests: 120, InputLen: 16, OutputLen: 10, Seed: 5, JSONL: &jsonl,
		NoPreflight: true})
	lv := res.Levels[0]
	st := emu.State()
	t.Logf("injected: 500 %d, cuts %d, errors %d; level: completed %d failures %v", st.Injected500, st.InjectedCuts, st.InjectedErrors, lv.Completed, lv.Failures)
	if st.Injected500 == 0 || st.InjectedCuts == 0 || st.InjectedErrors == 0 {
		t.Fatalf("the seed injected too few faults to test: %+v", st)
	}
	want := map[string]int{"http_500": int(st.Injected500), macro.FailCutStream: int(st.InjectedCuts), macro.FailErrorEvent: int(st.InjectedErrors)}
	for k, v := range want {
		if lv.Failures[k] != v {
			t.Errorf("failures[%s] = %d, want %d", k, lv.Failures[k], v)
		}
	}
	nf := int(st.Injected500 + st.InjectedCuts + st.InjectedErrors)
	if lv.Failed != nf || lv.Completed != 120-nf || lv.Completed != int(st.Succeeded) {
		t.Errorf("failed %d completed %d (server finished %d), want %d and %d", lv.Failed, lv.Completed, st.Succeeded, nf, 120-nf)
	}
	if lv.TotalOutputTokens != int64(10*lv.Completed) {
		t.Errorf("output tokens %d: failed requests' tokens were counted", lv.TotalOutputTokens)
	}
	// The JSONL file has every request with its reason.
	reasons := map[string]int{}
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(jsonl.Bytes()), []byte("\n")) {
		var r macro.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("bad JSONL line %q: %v", line, err)
		}
		n++
		if r.Failure != "" {
			reasons[r.Failure]++
			if r.Error == "" {
				t.Errorf("failure %s without its error text", r.Failure)
			}
		}
	}
	if n != 120 || reasons["http_500"] != want["http_500"] || reasons[macro.FailCutStream] != want[macro.FailCutStream] {
		t.Errorf("JSONL: %d lines, reasons %v", n, reasons)
	}
}

// TestContinuousUsageRefused: a server that answers 400 to
// continuous_usage_stats is found by the pre-flight request, once; the
// measured requests go without it, none is retried, tokens come from the
// final usage, and the result says so.
func TestContinuousUsageRefused(t *testing.T) {
	t.Parallel()
	cfg := vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true, RejectContinuousUsage: true}
	emu, url := startEmu(t, cfg)
	var logs []string
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Requests: 12, InputLen: 16, OutputLen: 10, Seed: 6,
		Log: func(m string) { logs = append(logs, m) }})
	lv := res.Levels[0]
	if lv.Completed != 12 || lv.Failed != 0 || lv.TokenSource != macro.SourceFinal || lv.TotalOutputTokens != 120 {
		t.Errorf("completed %d failed %d source %s tokens %d", lv.Completed, lv.Failed, lv.TokenSource, lv.TotalOutputTokens)
	}
	if res.Continuous || res.Preflight != "ok without continuous_usage_stats" || !strings.Contains(strings.Join(res.Warnings, "\n"), "refused continuous_usage_stats") {
		t.Errorf("the fallback was not reported: continuous %v preflight %q warnings %q", res.Continuous, res.Preflight, res.Warnings)
	}
	// 12 measured and the pre-flight's second try; its first was refused.
	if emu.State().Succeeded != 13 {
		t.Errorf("server finished %d requests, want 13", emu.State().Succeeded)
	}
	// Without the pre-flight every request asks for it and fails, none is
	// retried, and the level says why.
	res = runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 4, InputLen: 16, OutputLen: 10, NoPreflight: true})
	lv = res.Levels[0]
	if lv.Completed != 0 || lv.Failures["http_400"] != 4 || emu.State().Succeeded != 13 ||
		!strings.Contains(strings.Join(lv.Warnings, "\n"), "4 requests failed because the server refuses continuous_usage_stats") {
		t.Errorf("no pre-flight: completed %d failures %v warnings %q", lv.Completed, lv.Failures, lv.Warnings)
	}
}

func TestServerWithoutUsage(t *testing.T) {
	// Steps long enough that the server never has two tokens of one request
	// waiting when it writes: a late writer sends them in one chunk (as vLLM
	// does), and without usage a chunk can only count as one token.
	// Without /tokenize the chunks are counted, and a warning says so.
	cfg := vllmemu.Config{StepTime: 20 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true, NoUsage: true, NoTokenize: true}
	_, url := startEmu(t, cfg)
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 4, InputLen: 16, OutputLen: 10, Seed: 6})
	lv := res.Levels[0]
	if lv.TokenSource != macro.SourceChunks || lv.TotalOutputTokens != 40 || lv.InputTokenSource != "estimate" {
		t.Errorf("source %s tokens %d input %s", lv.TokenSource, lv.TotalOutputTokens, lv.InputTokenSource)
	}
	if w := strings.Join(lv.Warnings, "\n"); !strings.Contains(w, "counted one per chunk") || !strings.Contains(w, "one token per word") {
		t.Errorf("level warnings %q", lv.Warnings)
	}
}

// failAfter accepts n writes, then fails every one (a full disk).
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("no space left on device")
	}
	f.n--
	return len(p), nil
}

// A JSONL file that stops taking records is said in the result's notes; the
// sweep itself goes on.
func TestJSONLWriteFailureNoted(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 6, InputLen: 8, OutputLen: 4, Seed: 3, JSONL: &failAfter{n: 3}})
	if res.Levels[0].Completed != 6 {
		t.Errorf("completed %d, want 6", res.Levels[0].Completed)
	}
	found := false
	for _, n := range res.Notes {
		if strings.Contains(n, "after 3 of them") && strings.Contains(n, "no space left on device") {
			found = true
		}
	}
	if !found {
		t.Errorf("no note of the failed JSONL write: %q", res.Notes)
	}
}

// With only a final usage, chunks that carry several tokens (speculative
// decoding) still count every token in the level's throughput: the usage
// corrects the live count, which had one token per chunk.
func TestFinalUsageThroughput(t *testing.T) {
	tput := func(reject bool) (float64, string) {
		cfg := vllmemu.Config{StepTime: 4 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true,
			TokensPerStep: 3, RejectContinuousUsage: reject}
		_, url := startEmu(t, cfg)
		lv := runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Requests: 16, InputLen: 8, OutputLen: 60, Seed: 4}).Levels[0]
		return lv.OutputThroughput, lv.TokenSource
	}
	exact, src1 := tput(false)
	final, src2 := tput(true)
	if src1 != macro.SourceContinuous || src2 != macro.SourceFinal {
		t.Fatalf("sources %s, %s", src1, src2)
	}
	r := final / exact
	t.Logf("throughput %.0f tok/s from the final usage, %.0f with usage on every chunk (ratio %.2f)", final, exact, r)
	if r < 0.75 || r > 1.33 {
		t.Errorf("ratio %.2f: the final usage's throughput is not the exact one's", r)
	}
}

package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// vllm bench serve's flag names work as the sweep's own; each level
// carries vLLM's keys (total_token_throughput, std_*, max_concurrency, the
// percentiles asked for); the human line shows p50/p90/p99.
func TestSweepVLLMNames(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, Seed: 3})
	out := filepath.Join(t.TempDir(), "res.json")
	code, _, errs := sweepCLI(t, "--url", url, "--max-concurrency", "2", "--num-prompts", "6", "--warmup", "0",
		"--random-input-len", "16", "--random-output-len", "8", "--request-rate", "inf",
		"--percentile-metrics", "ttft,itl", "--metric-percentiles", "50,95,99.9", "--save-result", "--result-filename", out, "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "levels 2, 6 requests per level") || !strings.Contains(errs, "input 16, output 8 tokens") {
		t.Errorf("the aliases did not set the sweep:\n%s", errs)
	}
	if !strings.Contains(errs, "p50/p90/p99 ms: TTFT ") {
		t.Errorf("the level line lacks p50/p90/p99:\n%s", errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("--result-filename: %v", err)
	}
	var doc struct{ Levels []map[string]any }
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Levels) != 1 {
		t.Fatalf("%v %s", err, b)
	}
	lv := doc.Levels[0]
	for _, k := range []string{"total_token_throughput", "std_ttft_ms", "std_tpot_ms", "std_itl_ms", "std_e2el_ms",
		"p50_ttft_ms", "p95_ttft_ms", "p99.9_ttft_ms", "p50_itl_ms", "p95_itl_ms", "p99.9_itl_ms", "p99_ttft_ms"} {
		if v, ok := lv[k].(float64); !ok || v <= 0 {
			t.Errorf("level %s = %v, want a figure", k, lv[k])
		}
	}
	if lv["max_concurrency"] != 2.0 || lv["completed"] != 6.0 {
		t.Errorf("max_concurrency %v completed %v", lv["max_concurrency"], lv["completed"])
	}
	if _, ok := lv["p95_tpot_ms"]; ok {
		t.Error("p95_tpot_ms written though tpot was not asked for")
	}
	if tt, ot := lv["total_token_throughput"].(float64), lv["output_throughput"].(float64); tt <= ot {
		t.Errorf("total_token_throughput %v not above output_throughput %v", tt, ot)
	}
}

// A wrong vLLM-ish flag, a flag with its alias, and bad percentiles are
// each one line, exit 2.
func TestSweepVLLMNamesBad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurency", "8"}, "flag provided but not defined: --max-concurency (see profdeck sweep -h)"},
		{[]string{"--ma", "8"}, "flag provided but not defined: --ma (see profdeck sweep -h)"},
		{[]string{"--backend", "tgi"}, "--backend tgi: want openai or vllm"},
		{[]string{"--endpoint", "/v1/embeddings"}, "--endpoint /v1/embeddings: want /v1/completions"},
		{[]string{"--goodput", "ttft=300"}, `--goodput ttft=300: want KEY:VALUE pairs`},
		{[]string{"--metadata", "novalue"}, `--metadata novalue: want KEY=VALUE pairs`},
		{[]string{"--port", "http"}, "--port http: want a port number"},
		{[]string{"--concurrency", "1", "--max-concurrency", "8"}, "--concurrency and --max-concurrency are the same flag (macro.concurrency): give one"},
		{[]string{"--metric-percentiles", "99,101"}, `--metric-percentiles: "101" is not a percentile`},
		{[]string{"--percentile-metrics", "ttft,goodput"}, `--percentile-metrics: "goodput" is not ttft`},
	} {
		code, _, errs := sweepCLI(t, append([]string{"--url", "http://127.0.0.1:9"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

// --requests with --duration: whichever comes last; a level of fewer than
// 10 completed requests is marked on its line and in the JSON.
func TestSweepRequestsAndDurationAndFew(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 0, PrefillPerToken: 0})
	code, out, errs := sweepCLI(t, "--url", url, "--concurrency", "1", "--requests", "12", "--duration", "50ms", "--warmup", "0",
		"--input-len", "8", "--output-len", "4", "--json", "-", "--no-preflight")
	if code != 0 || !strings.Contains(errs, "50ms and 12 requests, whichever comes last") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	var doc struct{ Levels []map[string]any }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Levels[0]["completed"].(float64) < 12 {
		t.Errorf("completed %v, want at least 12 (%v)", doc.Levels[0]["completed"], err)
	}
	code, out, errs = sweepCLI(t, "--url", url, "--concurrency", "1", "--num-prompts", "3", "--warmup", "0",
		"--input-len", "8", "--output-len", "4", "--json", "-", "--no-preflight")
	if code != 0 || !strings.Contains(errs, "FEW REQUESTS (3 < 10)") || !strings.Contains(out, `"few_requests": true`) {
		t.Errorf("exit %d, a 3-request level not marked:\n%s\n%s", code, errs, out)
	}
}

package macro_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

func sweepCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = macro.SweepMain(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

func TestSweepCommand(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true, FailureRate: 0.4, Seed: 3})
	jsonl := filepath.Join(t.TempDir(), "req.jsonl")
	code, out, errs := sweepCLI(t, "--url", url, "--concurrency", "1,2", "--requests", "5", "--warmup", "1",
		"--input-len", "16", "--output-len", "6", "--json", "-", "--jsonl", jsonl, "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	t.Log(errs)
	if n := strings.Count(errs, "\nC="); n != 2 {
		t.Errorf("want one progress line per level on stderr, got %d:\n%s", n, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json - is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"url", "model", "api", "started", "levels", "plateau", "preflight", "warnings", "definitions"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	if doc["model"] != "test/model" || doc["api"] != "completions" {
		t.Errorf("model %v api %v", doc["model"], doc["api"])
	}
	if _, err := time.Parse(time.RFC3339, doc["started"].(string)); err != nil {
		t.Errorf("started: %v", err)
	}
	lv := doc["levels"].([]any)[0].(map[string]any)
	for _, k := range []string{"concurrency", "completed", "failed", "failures", "duration_s", "total_input_tokens", "total_output_tokens",
		"request_throughput", "output_throughput", "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
		"mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms",
		"mean_e2el_ms", "median_e2el_ms", "p90_e2el_ms", "p99_e2el_ms", "token_source", "client_cpu_s", "p99_send_lag_ms", "client_bound"} {
		if _, ok := lv[k]; !ok {
			t.Errorf("level lacks %q", k)
		}
	}
	// Failed requests are data: completed + failed = measured requests.
	// --metrics-url defaults to the server's /metrics.
	if srv, ok := lv["server"].(map[string]any); !ok || srv["available"] != true {
		t.Errorf("level server side %v, want the emulator's /metrics read", lv["server"])
	}
	failed := 0.0
	for _, l := range doc["levels"].([]any) {
		lv := l.(map[string]any)
		c, f := lv["completed"].(float64), lv["failed"].(float64)
		if c+f != 5 || f != lv["failures"].(map[string]any)["http_500"] {
			t.Errorf("completed %v + failed %v != 5, or failures %v", c, f, lv["failures"])
		}
		failed += f
	}
	if failed == 0 {
		t.Error("no request failed: the test injects HTTP 500s")
	}
	b, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 12 {
		t.Errorf("JSONL has %d lines, want 12 (2 levels × (1 warm-up + 5))", n)
	}
}

func TestSweepCommandCannotStart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, url := startEmu(t, vllmemu.Config{CoarseTiming: true})
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--url", "ftp://x"}, 2, "--url"},
		{[]string{}, 2, "--url"},
		{[]string{"--url", url, "--concurrency", "1,x"}, 2, "--concurrency"},
		{[]string{"--url", url, "--api", "grpc"}, 2, "--api"},
		{[]string{"--url", url, "--requests", "3", "--duration", "1s"}, 2, "not both"},
		{[]string{"--url", dead}, 1, "cannot reach"},
		{[]string{"--url", dead, "--model", "m"}, 1, "cannot reach"},
		{[]string{"--url", url, "--model", "nope"}, 1, "does not exist"},
	}
	for _, c := range cases {
		code, _, errs := sweepCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errs, c.code, c.msg)
		}
		if c.code == 1 && !strings.HasPrefix(last, "profdeck sweep: ") {
			t.Errorf("%q: last line %q is not a one-line reason", c.args, last)
		}
	}
}

package headless_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/ui/headless"
)

func sweepCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, headless.SweepMain, args...)
}

// startEmu serves an emulator on loopback for one test.
func startEmu(t testing.TB, cfg vllmemu.Config) (*vllmemu.Emulator, string) {
	t.Helper()
	return emutest.Start(t, cfg)
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
	for _, k := range []string{"url", "model", "api", "started", "levels", "plateau", "preflight", "warnings", "definitions", "path"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	if p := doc["path"].(map[string]any); p["kind"] != "direct" || p["probes"] != 10.0 || len(p["levels"].([]any)) != 2 ||
		!strings.Contains(errs, "path: direct · round trip p50 ") {
		t.Errorf("path %v; stderr:\n%s", p, errs)
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

// A sweep through the campaign's SSH host reaches a server bound to the
// host's loopback over the SSH connection (direct-tcpip), as the cockpit
// does; with forwarding refused by sshd it cannot start.
func TestSweepCommandOverSSH(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	for _, c := range []struct {
		name  string
		extra []string
		code  int
	}{
		{"forwarding", []string{"AllowTcpForwarding yes"}, 0},
		{"no forwarding", []string{"AllowTcpForwarding no"}, 1},
	} {
		srv := sshtest.Start(t, sshtest.Options{ExtraConfig: c.extra})
		dir := t.TempDir()
		sshConfig := filepath.Join(dir, "ssh_config")
		writeFile(t, sshConfig, "")
		camp := filepath.Join(dir, "profdeck.yaml")
		writeFile(t, camp, fmt.Sprintf("host: %s\nssh:\n  identity: %s\n  known_hosts: %s\n  config: %s\nserver:\n  url: %s\n"+
			"macro:\n  concurrency: [1, 2]\n  requests: 4\n  warmup: 0\n  input_len: 16\n  output_len: 4\n",
			srv.Target(), srv.ClientKey, srv.KnownHosts, sshConfig, url))
		out := filepath.Join(dir, "sweep.json")
		code, _, errs := sweepCLI(t, "-c", camp, "--json", out, "--metrics-url", "off")
		if code != c.code {
			t.Fatalf("%s: exit %d, want %d\nstderr:\n%s\nsshd:\n%s", c.name, code, c.code, errs, srv.Log())
		}
		if c.code != 0 {
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: a sweep that could not start wrote %s", c.name, out)
			}
			continue
		}
		if !strings.Contains(errs, "via "+srv.Host) {
			t.Errorf("%s: stderr does not name the SSH host:\n%s", c.name, errs)
		}
		var doc struct {
			Levels []struct{ Concurrency, Completed int }
			Path   phases.MacroPath
		}
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Levels) != 2 || doc.Levels[1].Completed != 4 {
			t.Errorf("%s: result %s (%v)", c.name, b, err)
		}
		// The path says the load went through SSH, whose server sends at once.
		if p := doc.Path; p.Kind != phases.PathSSH || p.Nodelay != "pty" || !strings.Contains(p.Via, srv.Addr()) ||
			!strings.Contains(errs, "path: SSH via ") || !strings.Contains(errs, "sends at once: yes") {
			t.Errorf("%s: path %+v\nstderr:\n%s", c.name, p, errs)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// 404 on /v1/completions: without the pre-flight every request fails, the
// command exits 1 with the server's text on stderr once per distinct error;
// with it the sweep stops at once with the status and the text.
func TestSweepCommandServer404(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		http.Error(w, `{"error":{"message":"Not Found: no such route","code":404}}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL
	code, _, errs := sweepCLI(t, "--url", url, "--concurrency", "1,2", "--requests", "4", "--no-preflight", "--metrics-url", "off")
	if code != 1 || strings.Count(errs, "no such route") != 1 || !strings.Contains(errs, "error: http_404 ×4") || strings.Contains(errs, "CLIENT-BOUND") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = sweepCLI(t, "--url", url, "--concurrency", "1", "--requests", "4", "--metrics-url", "off")
	if code != 1 || !strings.Contains(errs, "HTTP 404: {\"error\":{\"message\":\"Not Found: no such route\"") {
		t.Errorf("pre-flight: exit %d, stderr:\n%s", code, errs)
	}
}

package headless_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

const metricsTestdata = "../../phases/macro/servermetrics/testdata/"

func TestParseMetricsMain(t *testing.T) {
	code, out, errOut := runCLI(t, headless.ParseMetricsMain, metricsTestdata+"constructed-v0.11-dp2-specdecode.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if f["available"] != true || f["running"] != 125.0 || f["kv_cache_usage"] != 0.5 || f["engines"] != 2.0 {
		t.Fatalf("got %s", out)
	}
	if v, _ := f["spec_accept_rate_total"].(float64); v < 0.599 || v > 0.601 {
		t.Fatalf("spec acceptance %v", f["spec_accept_rate_total"])
	}
}

func TestParseMetricsMainSaysWhatIsMissing(t *testing.T) {
	code, out, errOut := runCLI(t, headless.ParseMetricsMain, metricsTestdata+"vllm-metrics-03-v0.8-v1early-prodstack-qwen25coder32b.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var f struct{ Missing []string }
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.Missing, ",") != "preemptions_total,generation_tokens_total,prompt_tokens_total,requests_total" {
		t.Fatalf("missing %v", f.Missing)
	}
}

func TestParseMetricsMainNoVLLMSeries(t *testing.T) {
	code, out, errOut := runCLI(t, headless.ParseMetricsMain, metricsTestdata+"vllm-metrics-06-v1-source-definitions-renames.txt")
	if code != 0 || !strings.Contains(out, `"available": false`) || !strings.Contains(out, "no vLLM or SGLang serving series") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}

func TestParseMetricsMainBadInput(t *testing.T) {
	if code, _, errOut := runCLI(t, headless.ParseMetricsMain, metricsTestdata+"missing.txt"); code != 2 || !strings.Contains(errOut, "missing.txt") {
		t.Fatalf("exit %d, stderr %q: want the file named", code, errOut)
	}
	if code, _, errOut := runCLI(t, headless.ParseMetricsMain); code != 2 || !strings.Contains(errOut, "want 1 file argument") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// A saved SGLang /metrics reads as SGLang's: its engine named, running,
// queued and token usage read, what it lacks listed.
func TestParseMetricsMainSGLang(t *testing.T) {
	code, out, errOut := runCLI(t, headless.ParseMetricsMain, "../../phases/load/testdata/corpus/train/n03-sglang-044-running-token-usage.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	if f["engine"] != "sglang" || f["available"] != true || f["running"] != 0.0 || f["kv_cache_metric"] != "sglang:token_usage" || f["waiting"] != nil {
		t.Fatalf("got %s", out)
	}
}

package headless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

func TestParseMetricsMain(t *testing.T) {
	var out, errb bytes.Buffer
	code := headless.ParseMetricsMain(context.Background(), []string{"../../phases/macro/servermetrics/testdata/constructed-v0.11-dp2-specdecode.txt"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var f map[string]any
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if f["available"] != true || f["running"] != 125.0 || f["kv_cache_usage"] != 0.5 || f["engines"] != 2.0 {
		t.Fatalf("got %s", out.String())
	}
	if v, _ := f["spec_accept_rate_total"].(float64); v < 0.599 || v > 0.601 {
		t.Fatalf("spec acceptance %v", f["spec_accept_rate_total"])
	}
}

func TestParseMetricsMainSaysWhatIsMissing(t *testing.T) {
	var out, errb bytes.Buffer
	if code := headless.ParseMetricsMain(context.Background(), []string{"../../phases/macro/servermetrics/testdata/vllm-metrics-03-v0.8-v1early-prodstack-qwen25coder32b.txt"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var f struct{ Missing []string }
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.Missing, ",") != "preemptions_total,generation_tokens_total" {
		t.Fatalf("missing %v", f.Missing)
	}
}

func TestParseMetricsMainNoVLLMSeries(t *testing.T) {
	var out, errb bytes.Buffer
	code := headless.ParseMetricsMain(context.Background(), []string{"../../phases/macro/servermetrics/testdata/vllm-metrics-06-v1-source-definitions-renames.txt"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"available": false`) || !strings.Contains(out.String(), "no vLLM serving series") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

func TestParseMetricsMainBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := headless.ParseMetricsMain(context.Background(), []string{"../../phases/macro/servermetrics/testdata/missing.txt"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "missing.txt") {
		t.Fatalf("exit %d, stderr %q: want the file named", code, errb.String())
	}
	errb.Reset()
	if code := headless.ParseMetricsMain(context.Background(), nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "want 1 file argument") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

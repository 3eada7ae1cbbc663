package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sglangCampaign is a campaign on the simulated deployment playing SGLang.
const sglangCampaign = `host: sim
notebook: nb.md
server:
  url: http://127.0.0.1:8000
  engine: sglang
  launch: python3 -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --enable-metrics --port 8000
sim:
  load_time: 2s
`

// The simulated SGLang deployment end to end: load follows its log to
// ready and names the engine; the sweep reads its sglang: /metrics.
func TestSGLangSimLoadAndSweep(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "campaign.yaml")
	if err := os.WriteFile(path, []byte(sglangCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, loadMain, "-c", path, "--poll", "200ms", "--jsonl", "-")
	if code != 0 || !strings.Contains(errs, "ready") {
		t.Fatalf("load: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var end struct {
		Ending string `json:"ending"`
		State  struct {
			Engine        string  `json:"engine"`
			KVCacheTokens float64 `json:"kv_cache_tokens"`
			WeightsGiB    float64 `json:"weights_gib"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Ending != "ready" ||
		end.State.Engine != "sglang" || end.State.KVCacheTokens != 1<<18 || end.State.WeightsGiB < 70 {
		t.Errorf("load ending %+v (%v); want ready, sglang, 262144 KV tokens, the weights read", end, err)
	}

	code, out, errs = sweepCLI(t, "-c", path, "--concurrency", "1,4", "--requests", "12", "--warmup", "1",
		"--input-len", "16", "--output-len", "8", "--json", "-")
	if code != 0 {
		t.Fatalf("sweep: exit %d\nstderr:\n%s", code, errs)
	}
	var doc struct {
		Levels []struct {
			Concurrency int `json:"concurrency"`
			Server      struct {
				Available      bool    `json:"available"`
				Engine         string  `json:"engine"`
				GenerationTokS float64 `json:"generation_tok_s"`
			} `json:"server"`
		} `json:"levels"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Levels) != 2 {
		t.Fatalf("sweep JSON: %v\n%s", err, out)
	}
	for _, lv := range doc.Levels {
		s := lv.Server
		if !s.Available || s.Engine != "sglang" || s.GenerationTokS <= 0 {
			t.Errorf("C=%d server %+v; want SGLang's /metrics read with a generation rate", lv.Concurrency, s)
		}
	}
}

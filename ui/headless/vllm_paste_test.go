package headless_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// vllmLines are `vllm bench serve` command lines as published, each with
// where it was found. They run as written but for: the simulated host
// added (--host sim, which then serves the model each names and takes the
// place of their --host/--port/--base-url), sizes cut to a few requests of
// few tokens (pasteShrink), shell variables given values, a dataset path
// pointed at a small ShareGPT file, and a relative --result-dir made the
// test's folder.
var vllmLines = []struct{ src, line string }{
	{"https://github.com/vllm-project/vllm/pull/28227",
		"vllm bench serve --model deepseek-ai/DeepSeek-R1  --dataset-name random --host 127.0.0.1 --port 9256 --random-input-len 4 --random-output-len 1024 --request-rate inf --num-prompts 160 --max-concurrency 32"},
	{"https://github.com/vllm-project/vllm-skills/pull/13",
		"vllm bench serve --backend openai-chat --host 127.0.0.1 --port 8000 --endpoint /v1/chat/completions --dataset-name random --num-prompts 1000"},
	{"https://github.com/vllm-project/vllm/issues/28104",
		"vllm bench serve --model Qwen3 --tokenizer /mnt/workspace/models --host 127.0.0.1 --port 80 --num-prompts 400 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 90,95,99 --dataset-name sharegpt --dataset-path /mnt/workspace/benchmarks/sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json --sharegpt-output-len 512"},
	{"https://github.com/vllm-project/vllm/pull/49173",
		"vllm bench serve --backend openai-chat --base-url http://127.0.0.1:8001 --endpoint /v1/chat/completions --dataset-name random --random-input-len 64 --random-output-len 64"},
	{"https://github.com/vllm-project/vllm-ascend/issues/13574",
		"vllm bench serve --model /workspace/shared_assets/QuenchingAction/Toolchain/Model/Qwen3-8B --served-model-name qwen3 --port 8113 --dataset-name random --random-input 200 --num-prompts 200 --request-rate 1 --save-result --result-dir ./"},
	{"github.com/skylee-01/vllm examples/my_test/strss.sh",
		"vllm bench serve --backend vllm --model /home/lisiqi/work/models/Qwen3-4B --endpoint /v1/completions --dataset-name sharegpt --dataset-path /home/lisiqi/work/models/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 10"},
	{"https://github.com/vllm-project/vllm/issues/16411 (benchmarks/benchmark_serving.py, vllm bench serve's flags)",
		"uv run benchmark_serving.py --backend openai-chat --endpoint /v1/chat/completions --model meta-llama/Llama-4-Scout-17B-16E --dataset-name random --random-input-len 3000 --random-output-len 10000 --num-prompts 1000 --max-concurrency 100 --save-result --result-dir results --num-prompts 100"},
	{"https://github.com/vllm-project/vllm/pull/23867",
		"vllm bench serve --model 'Qwen/Qwen3-0.6B'"},
	{"https://github.com/vllm-project/vllm/pull/54628 (the reviewer's line, its Responses backend as openai-chat)",
		"vllm bench serve --backend openai-chat --model /mnt/nvme/shared/models/ZhipuAI/GLM-5.3-Flash --endpoint /v1/chat/completions --dataset-name random --random-input-len 8192 --random-output-len 1280 --num-prompts 32 --max-concurrency 32 --request-rate inf --ignore-eos --temperature 0 --seed 12345"},
	{"https://github.com/sgl-project/sglang/pull/5495 (sglang.bench_serving, vLLM's goodput flag)",
		`python -m sglang.bench_serving --backend sglang --dataset-name random  --num-prompts 10 --max-concurrency 1  --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json    --random-input 128 --random-output 128 --random-range-ratio 0.9 --host 127.0.0.1 --port 9122 --goodput "ttft:100" "tpot:50" "e2el:790"`},
}

// pasteShrink cuts a line's sizes so that it runs in seconds.
var pasteShrink = map[string]string{
	"--num-prompts": "8", "--random-input-len": "32", "--random-input": "32", "--random-output-len": "8",
	"--random-output": "8", "--max-concurrency": "2",
}

// pasteArgs is a line's arguments after its command, as the test runs it.
func pasteArgs(line, dataset, dir string) []string {
	fields := strings.Fields(line)
	for i, f := range fields {
		if f == "serve" || strings.HasSuffix(f, ".py") || f == "sglang.bench_serving" {
			fields = fields[i+1:]
			break
		}
	}
	var out []string
	cap := false
	for i := 0; i < len(fields); i++ {
		a := strings.Trim(fields[i], `'"`)
		out = append(out, a)
		if i+1 >= len(fields) {
			continue
		}
		v := strings.Trim(fields[i+1], `'"`)
		switch {
		case pasteShrink[a] != "":
			v = pasteShrink[a]
		case a == "--request-rate" && v != "inf":
			v = "40"
		case a == "--dataset-path":
			v = dataset
		case a == "--result-dir":
			v = dir
		}
		if a == "--max-concurrency" || a == "--request-rate" {
			cap = true
		}
		if !strings.HasPrefix(v, "--") {
			out = append(out, v)
			i++
		}
	}
	if !cap {
		out = append(out, "--concurrency", "2") // the line's one run of vLLM's, not a sweep of levels
	}
	return append(out, "--host", "sim", "--seed", "1")
}

// Ten vllm bench serve lines run as pasted against the simulated host:
// each exits 0, measures its requests, and keeps its result document,
// whose path it says.
func TestVLLMLinesPaste(t *testing.T) {
	t.Parallel()
	dataset := shareGPTFile(t)
	for i, l := range vllmLines {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := pasteArgs(l.line, dataset, dir)
			code, _, errs := sweepCLI(t, args...)
			if code != 0 {
				t.Fatalf("%s\n%v: exit %d:\n%s", l.src, args, code, errs)
			}
			m := regexp.MustCompile(`(?m)^result: (.+)$`).FindStringSubmatch(errs)
			if m == nil {
				t.Fatalf("%s: no result: line:\n%s", l.src, errs)
			}
			var doc struct{ Levels []struct{ Completed int } }
			b, err := os.ReadFile(m[1])
			if err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Levels) == 0 || doc.Levels[0].Completed == 0 {
				t.Fatalf("%s: result %s: %v %.300s", l.src, m[1], err, b)
			}
			if strings.Contains(l.line, "--result-dir") && filepath.Dir(m[1]) != dir {
				t.Errorf("%s: result in %s, not the --result-dir %s", l.src, m[1], dir)
			}
		})
	}
}

// shareGPTFile is a small ShareGPT dataset.
func shareGPTFile(t *testing.T) string {
	var convs []map[string]any
	for i := range 12 {
		convs = append(convs, map[string]any{"conversations": []map[string]string{
			{"from": "human", "value": strings.Repeat(fmt.Sprintf("question %d about the weather ", i), 4)},
			{"from": "gpt", "value": strings.Repeat("a short answer ", 4)},
		}})
	}
	b, _ := json.Marshal(convs)
	path := filepath.Join(t.TempDir(), "sharegpt.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// --max-concurrency with --request-rate caps the requests in flight, as
// vLLM does: the header says so, the emulator never sees more than the
// cap running, and the result records max_concurrency.
func TestSweepRateCapped(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 20 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, Seed: 3})
	out := filepath.Join(t.TempDir(), "r.json")
	recs := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, errs := sweepCLI(t, "--url", url, "--max-concurrency", "2", "--request-rate", "200", "--num-prompts", "12",
		"--num-warmups", "0", "--random-input-len", "16", "--random-output-len", "8", "--no-preflight", "--json", out,
		"--jsonl", recs, "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "open loop at 200 req/s, at most 2 in flight") {
		t.Errorf("the header does not say the cap:\n%s", errs)
	}
	if peak := peakInFlight(t, recs); peak > 2 {
		t.Errorf("%d requests were in flight at once, over the cap of 2", peak)
	}
	var doc struct {
		MaxConcurrency int `json:"max_concurrency"`
		Levels         []struct {
			MaxConcurrency int `json:"max_concurrency"`
			Completed      int
			ClientBound    bool `json:"client_bound"`
		}
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Levels) != 1 {
		t.Fatalf("%v %.300s", err, b)
	}
	if doc.MaxConcurrency != 2 || doc.Levels[0].MaxConcurrency != 2 || doc.Levels[0].Completed != 12 {
		t.Errorf("max_concurrency %d, level's %d, completed %d", doc.MaxConcurrency, doc.Levels[0].MaxConcurrency, doc.Levels[0].Completed)
	}
	if doc.Levels[0].ClientBound {
		t.Error("a level held at its cap is marked client-bound")
	}
}

// vLLM's flags that mean something here take effect (--goodput as the
// SLO, --metadata in the document, --served-model-name as the model sent,
// --save-detailed as the per-request records); one that means nothing is
// one line and the run goes on.
func TestSweepVLLMFlagsMeaning(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{Model: "served", StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, Seed: 3})
	dir := t.TempDir()
	code, _, errs := sweepCLI(t, "--base-url", url, "--model", "org/weights", "--served-model-name", "served",
		"--max-concurrency", "2", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "8",
		"--goodput", "ttft:5000", "tpot:500", "--metadata", "version=0.3.3", "tp=1", "--temperature", "0.7",
		"--result-dir", dir, "--save-detailed", "--ignore-eos", "--tokenizer", "org/weights", "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "ignored: --temperature: "); n != 1 {
		t.Errorf("--temperature said %d times:\n%s", n, errs)
	}
	m := regexp.MustCompile(`(?m)^result: (.+)$`).FindStringSubmatch(errs)
	if m == nil || filepath.Dir(m[1]) != dir {
		t.Fatalf("no result line in --result-dir %s:\n%s", dir, errs)
	}
	var doc struct {
		Model    string
		Metadata map[string]string
		SLO      *struct{ Spec string }
	}
	b, _ := os.ReadFile(m[1])
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "served" || doc.Metadata["version"] != "0.3.3" || doc.Metadata["tp"] != "1" {
		t.Errorf("model %q metadata %v", doc.Model, doc.Metadata)
	}
	if doc.SLO == nil || !strings.Contains(doc.SLO.Spec, "ttft") || !strings.Contains(doc.SLO.Spec, "tpot") {
		t.Errorf("--goodput did not set the SLO: %+v", doc.SLO)
	}
	recs, err := os.ReadFile(strings.TrimSuffix(m[1], ".json") + ".requests.jsonl")
	if err != nil || strings.Count(string(recs), "\n") < 4 {
		t.Errorf("--save-detailed: %v, %d lines", err, strings.Count(string(recs), "\n"))
	}
	if !strings.Contains(string(recs), `"itl_ms":[`) {
		t.Errorf("--save-detailed: the records hold no itl_ms:\n%.400s", recs)
	}
}

// peakInFlight is the most requests of a JSON lines file in flight at
// once, from their sends and end-to-end latencies.
func peakInFlight(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ from, to float64 }
	var spans []span
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			SentS  float64 `json:"sent_s"`
			E2ELms float64 `json:"e2el_ms"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.E2ELms > 0 {
			spans = append(spans, span{r.SentS, r.SentS + r.E2ELms/1000})
		}
	}
	peak := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if o.from <= s.from && s.from < o.to {
				n++
			}
		}
		peak = max(peak, n)
	}
	return peak
}

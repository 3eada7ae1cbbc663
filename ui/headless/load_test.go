package headless_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/headless"
)

func loadMain(ctx context.Context, args []string, out, errb io.Writer) int {
	return headless.LoadMain(ctx, args, out, errb)
}

func TestLoadCommandReady(t *testing.T) {
	t.Parallel()
	code, out, errs := runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "2s", "--poll", "200ms", "--every", "1s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "ready: GET http://127.0.0.1:8000/health answered 200") || !strings.Contains(out, "reached weights") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestLoadCommandStalledAndFailed(t *testing.T) {
	t.Parallel()
	code, out, errs := runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "2s", "--sim-stall-at", "30", "--stall-after", "1500ms", "--poll", "200ms")
	if code != 3 || !strings.Contains(errs, "stalled: STALLED at 30.0 GiB on GPUs 0-7") {
		t.Fatalf("stall: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// The stall is diagnosed before the command ends: the workers found on
	// the GPUs read nothing, the GPUs idle; py-spy groups the 8 ranks.
	if !strings.Contains(out, "why: weights I/O stopped (0 B/s for ") || !strings.Contains(out, "8 ranks in safetensors/torch.py: _read_into") {
		t.Errorf("no diagnosis in stdout:\n%s", out)
	}
	code, out, _ = runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "2s", "--sim-stall-at", "30", "--stall-after", "1500ms", "--poll", "200ms", "--jsonl", "-")
	last := strings.Split(strings.TrimSpace(out), "\n")
	var stalled struct {
		Ending    string `json:"ending"`
		Diagnosis struct {
			Verdict string `json:"verdict"`
			Procs   []any  `json:"procs"`
		} `json:"diagnosis"`
		State phases.LoadState `json:"state"`
	}
	if err := json.Unmarshal([]byte(last[len(last)-1]), &stalled); err != nil || code != 3 || stalled.Ending != "stalled" ||
		!strings.HasPrefix(stalled.Diagnosis.Verdict, "weights I/O stopped") || len(stalled.Diagnosis.Procs) != 8 {
		t.Errorf("--jsonl stall: exit %d, last line %q: %v", code, last[len(last)-1], err)
	}
	// The ending's state is the stall's: its stall, nothing moved for at
	// least the stall's time, and no ETA or rate while stalled.
	if st := stalled.State; st.Stall == nil || st.IdleS < st.Stall.ForS || st.ShardETA != 0 || len(st.GPUs) == 0 || st.GPUs[0].ETASeconds != 0 || st.GPUs[0].RateGiBMin != 0 {
		t.Errorf("the stalled ending's state: %+v", st)
	}
	code, out, errs = runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "2s", "--sim-fail", "nccl", "--poll", "200ms", "--jsonl", "-")
	if code != 3 || !strings.Contains(errs, "failed: nccl: ") {
		t.Fatalf("nccl: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var end map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end["ending"] != "failed" {
		t.Errorf("last JSON line %q: %v", lines[len(lines)-1], err)
	}
}

// --json writes the ending as a document; --jsonl keeps the events.
func TestLoadCommandJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc, lines := filepath.Join(dir, "load.json"), filepath.Join(dir, "load.jsonl")
	code, out, errs := runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "1s", "--poll", "200ms", "--json", doc, "--jsonl", lines)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var end struct {
		Ending string
		State  struct{ Ready bool }
	}
	b, err := os.ReadFile(doc)
	if err != nil || json.Unmarshal(b, &end) != nil || end.Ending != "ready" || !end.State.Ready {
		t.Errorf("--json: %s %v", b, err)
	}
	b, err = os.ReadFile(lines)
	if err != nil || !strings.Contains(string(b), `"load.milestone"`) {
		t.Errorf("--jsonl: %s %v", b, err)
	}
}

func TestLoadCommandUsage(t *testing.T) {
	t.Parallel()
	if code, _, errs := runCLI(t, loadMain, "--bogus"); code != 2 || !strings.Contains(errs, "bogus") {
		t.Errorf("bad flag: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, loadMain, "-c", "/nonexistent/profdeck.yaml"); code != 2 || !strings.Contains(errs, "/nonexistent/profdeck.yaml") {
		t.Errorf("missing campaign: %d %s", code, errs)
	}
	// A 0 load time is refused naming the flag, as its help says.
	if code, _, errs := runCLI(t, loadMain, "--host", "sim", "--sim-load-time", "0s"); code != 2 || !strings.Contains(errs, "--sim-load-time: must be more than 0") {
		t.Errorf("--sim-load-time 0s: %d %s", code, errs)
	}
	if _, _, errs := runCLI(t, loadMain, "-h"); !strings.Contains(errs, "else 60s; more than 0") {
		t.Errorf("help: %s", errs)
	}
}

func TestParseCommands(t *testing.T) {
	code, out, errs := runCLI(t, headless.ParseLogMain,
		"../../phases/load/vllmlog/testdata/vllm-log-14-nccl-errors-v0.5-v0.8-FAILURE.txt")
	if code != 0 {
		t.Fatalf("parse vllm-log: %d %s", code, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"vllm_version", "state", "shards", "weights_gib", "load_seconds", "kv_cache_tokens", "ranks", "failure"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("key %s missing: %s", k, out)
		}
	}
	if sum["state"] != "failed" || sum["failure"].(map[string]any)["kind"] != "nccl" {
		t.Errorf("summary: %s", out)
	}
	code, out, _ = runCLI(t, headless.ParseSMIMain,
		"../../phases/load/smi/testdata/nvidia-smi-03-h100x8-535-table.txt")
	var smiOut struct {
		GPUs []map[string]any `json:"gpus"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &smiOut) != nil || len(smiOut.GPUs) != 8 || smiOut.GPUs[0]["memory_total_mib"] != 81559.0 {
		t.Errorf("parse nvidia-smi: %d %s", code, out)
	}
	if code, _, errs := runCLI(t, headless.ParseLogMain,
		"/nonexistent.log"); code != 2 || !strings.Contains(errs, "/nonexistent.log") {
		t.Errorf("missing file: %d %s", code, errs)
	}
}

// parse sglang-log and parse vllm-log read an SGLang log alike: the engine
// is told from the log.
func TestParseSGLangLog(t *testing.T) {
	for _, main := range []func(context.Context, []string, io.Writer, io.Writer) int{headless.ParseSGLangLogMain, headless.ParseLogMain} {
		code, out, errs := runCLI(t, main, "../../phases/load/testdata/corpus/train/g04-runai-load-weight-elapsed.txt")
		var sum map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
			t.Fatalf("exit %d: %s %s", code, out, errs)
		}
		if sum["engine"] != "sglang" || sum["weights_gib"] != 15.5 || sum["kv_cache_tokens"] != 2206208.0 || len(sum["ranks"].([]any)) != 4 {
			t.Errorf("summary: %s", out)
		}
	}
}

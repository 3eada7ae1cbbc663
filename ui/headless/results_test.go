package headless_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// keptResult is the path a command said it kept its result at, read as
// JSON into v.
func keptResult(t *testing.T, errs string, v any) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^result: (.+)$`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no result: line:\n%s", errs)
	}
	b, err := os.ReadFile(m[1])
	if err != nil || json.Unmarshal(b, v) != nil {
		t.Fatalf("result %s: %v %.200s", m[1], err, b)
	}
	return m[1]
}

// A sweep, a search, a micro and an NCCL run without --json keep their
// result document (beside the journal when the campaign's exists, else in
// the results folder) and say where; --json still chooses the file.
func TestResultsKeptByDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	camp := filepath.Join(dir, "c.yaml")
	journal := filepath.Join(dir, "nb.journal.jsonl")
	if err := os.WriteFile(camp, []byte("host: sim\nnotebook: "+filepath.Join(dir, "nb.md")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sweepArgs := []string{"--concurrency", "1", "--requests", "4", "--warmup", "0", "--input-len", "16", "--output-len", "4", "--seed", "1"}
	var doc struct{ Levels []any }
	_, _, errs := runCLI(t, headless.SweepMain, append([]string{"-c", camp}, sweepArgs...)...)
	if p := keptResult(t, errs, &doc); filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "sweep-") || len(doc.Levels) != 1 {
		t.Errorf("sweep kept %s (%d levels), want sweep-… beside the journal in %s", p, len(doc.Levels), dir)
	}
	_, _, errs = runCLI(t, headless.SweepMain, append([]string{"--host", "sim", "--slo", "ttft=5s", "--search", "concurrency", "--concurrency", "1,2"}, sweepArgs[2:]...)...)
	var search struct{ Search *struct{ Done bool } }
	if p := keptResult(t, errs, &search); filepath.Dir(p) != headless.ResultsDir || !strings.HasPrefix(filepath.Base(p), "search-") || search.Search == nil {
		t.Errorf("search kept %s, want search-… in %s", p, headless.ResultsDir)
	}
	for name, main := range map[string]func(context.Context, []string, io.Writer, io.Writer) int{"micro": headless.MicroMain, "nccl": headless.NCCLMain} {
		code, _, errs := runCLI(t, main, "--host", "sim", "--model-config", "qwen3-235b-a22b", "--tp", "8", "--batch", "1")
		var gpu map[string]any
		if p := keptResult(t, errs, &gpu); code != 0 || !strings.HasPrefix(filepath.Base(p), name+"-") {
			t.Errorf("%s: exit %d, kept %s", name, code, p)
		}
	}
	out := filepath.Join(t.TempDir(), "chosen.json")
	code, _, errs := runCLI(t, headless.SweepMain, append([]string{"--host", "sim", "--json", out}, sweepArgs...)...)
	if _, err := os.Stat(out); code != 0 || err != nil || strings.Contains(errs, "result: ") {
		t.Errorf("--json: exit %d, %v, stderr:\n%s", code, err, errs)
	}
}

package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/headless"
)

// explain gives the verdict for the plateau, or any level asked for, of a
// sweep's result document; bad input exits 2.
func TestExplain(t *testing.T) {
	srv := func(running, waiting, kv float64) *phases.ServerLevel {
		return &phases.ServerLevel{Available: true, MaxRunning: running, AtMaxRunningShare: 0.9, MaxWaiting: waiting,
			WaitingShare: map[bool]float64{true: 0.9, false: 0}[waiting > 0], MaxKVCacheUsage: kv}
	}
	doc := map[string]any{"levels": []phases.LevelResult{
		{Concurrency: 32, Completed: 64, OutputThroughput: 1000, MedianTPOTms: 30, Server: srv(32, 0, 0.1)},
		{Concurrency: 64, Completed: 128, OutputThroughput: 1240, MedianTPOTms: 48, Server: srv(64, 0, 0.2)},
		{Concurrency: 128, Completed: 256, OutputThroughput: 1250, MedianTPOTms: 48, Server: srv(64, 64, 0.2)},
	}, "plateau": phases.Plateau{Concurrency: 64, OutputThroughput: 1240}}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "sweep.json")
	os.WriteFile(p, b, 0o644)

	code, out, errs := runCLI(t, headless.ExplainMain, p, "--max-num-seqs", "64")
	if code != 0 || !strings.HasPrefix(out, "max_num_seqs: plateau at C=64: 64 of 64 sequences running") || !strings.Contains(out, "raise --max-num-seqs") {
		t.Fatalf("exit %d, %q, %q", code, out, errs)
	}
	code, out, _ = runCLI(t, headless.ExplainMain, p, "--level", "32", "--json", "-")
	var e struct {
		Concurrency      int
		Reason, Evidence string
	}
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e.Concurrency != 32 || e.Reason != "engine_step" || !strings.HasPrefix(e.Evidence, "C=32: at C=64 all its 64 requests running") {
		t.Errorf("--level 32: exit %d, %q", code, out)
	}
	// Every level is judged with the limits the sweep judged its plateau
	// with (its launch command's --max-num-seqs), as stored.
	doc["plateau"] = phases.Plateau{Concurrency: 64, OutputThroughput: 1240, MaxNumSeqs: 64, MaxNumSeqsSource: "the launch command", LimitsLooked: true}
	b, _ = json.Marshal(doc)
	os.WriteFile(p, b, 0o644)
	code, out, errs = runCLI(t, headless.ExplainMain, p, "--level", "128")
	if code != 0 || !strings.HasPrefix(out, "max_num_seqs: C=128:") || !strings.Contains(out, "of 64 sequences running") {
		t.Errorf("--level 128 with the sweep's stored limits: exit %d, %q, %q", code, out, errs)
	}
	for _, args := range [][]string{{p, "--level", "7"}, {filepath.Join(t.TempDir(), "absent.json")}, {}} {
		if code, _, errs := runCLI(t, headless.ExplainMain, args...); code != headless.ExitBadInput {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
}

// explain says which lines of a journal it skipped, as compare and report do.
func TestExplainNamesSkippedLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(p, append(mustRead(t, seedJournal), "{not json\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, headless.ExplainMain, p)
	if code != 0 || !strings.HasPrefix(out, "client_bound:") || !strings.Contains(errOut, "1 line(s) skipped") {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
}

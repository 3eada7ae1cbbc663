package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --loadgen host on the simulated host runs the load generator's agent in
// this process, by the same path a real host takes, and writes the same
// result document.
func TestSweepLoadgenHostSim(t *testing.T) {
	t.Parallel()
	code, out, errs := sweepCLI(t, "--host", "sim", "--loadgen", "host", "--concurrency", "1,2", "--requests", "4",
		"--warmup", "1", "--input-len", "16", "--output-len", "8", "--json", "-", "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "load generator on the host") || strings.Count(errs, "\nC=") != 2 {
		t.Errorf("stderr does not say where the load runs, or lacks a level line:\n%s", errs)
	}
	var doc struct {
		Model  string `json:"model"`
		Levels []struct {
			Completed int `json:"completed"`
		} `json:"levels"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json -: %v\n%s", err, out)
	}
	if len(doc.Levels) != 2 || doc.Levels[1].Completed != 4 || doc.Model == "" {
		t.Fatalf("result %+v", doc)
	}
}

// A --loadgen or macro.loadgen that is neither here nor host is bad input:
// one line, exit 2, before anything starts.
func TestSweepLoadgenBadValue(t *testing.T) {
	t.Parallel()
	code, _, errs := sweepCLI(t, "--url", "http://127.0.0.1:1", "--loadgen", "gpu")
	if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--loadgen") {
		t.Fatalf("exit %d, stderr %q: want one line naming --loadgen and exit 2", code, errs)
	}
	camp := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(camp, []byte("server:\n  url: http://127.0.0.1:1\nmacro:\n  loadgen: gpu\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = sweepCLI(t, "-c", camp)
	if code != 2 || !strings.Contains(errs, "macro.loadgen") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming macro.loadgen", code, errs)
	}
	// The flag given wins over the campaign's value.
	if err := os.WriteFile(camp, []byte("macro:\n  loadgen: host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = sweepCLI(t, "-c", camp, "--host", "sim", "--loadgen", "here", "--concurrency", "1", "--requests", "2",
		"--warmup", "0", "--input-len", "8", "--output-len", "4")
	if code != 0 || strings.Contains(errs, "load generator on the host") || !strings.Contains(errs, " via sim ") {
		t.Fatalf("exit %d, stderr %q: --loadgen here did not win over the campaign's host", code, errs)
	}
}

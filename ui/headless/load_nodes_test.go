package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two simulated nodes from the campaign: both followed to ready, the status
// lines name each node, and --json gives each GPU its host.
func TestLoadCommandTwoNodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	camp := filepath.Join(dir, "profdeck.yaml")
	if err := os.WriteFile(camp, []byte("host: sim\nmodel:\n  tp: 16\nsim:\n  nodes: 2\n  load_time: 2s\nload:\n  poll_interval: 200ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "load.json")
	code, out, errs := runCLI(t, loadMain, "-c", camp, "--every", "1s", "--json", doc)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "sim0: ") || !strings.Contains(out, "sim1: ") || !strings.Contains(errs, "2 nodes") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Ending string `json:"ending"`
		Nodes  []struct {
			Host string `json:"host"`
		} `json:"nodes"`
		GPUs []struct {
			Host  string `json:"host"`
			Index int    `json:"index"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, g := range d.GPUs {
		per[g.Host]++
	}
	if d.Ending != "ready" || len(d.Nodes) != 2 || per["sim0"] != 8 || per["sim1"] != 8 {
		t.Fatalf("document: ending %q, %d nodes, GPUs per host %v", d.Ending, len(d.Nodes), per)
	}
}

// One of two simulated nodes stalls alone: exit 3 and the reason names it
// (4 s without progress: the healthy node, on a loaded machine, may pause
// that long between its steps; the stalled one stays stalled).
func TestLoadCommandOneNodeStalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	camp := filepath.Join(dir, "profdeck.yaml")
	if err := os.WriteFile(camp, []byte("host: sim\nmodel:\n  tp: 16\nsim:\n  nodes: 2\n  fault_node: 1\n  load_time: 2s\n  stall_at_gib: 30\nload:\n  poll_interval: 200ms\n  stall_after: 4s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, loadMain, "-c", camp)
	if code != 3 || !strings.Contains(errs, "STALLED at 30.0 GiB on sim1, GPUs 0-7, for") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A campaign's macro.loadgen.hosts runs each level over its agents (here
// two agent processes on the simulated host, in this process): --json sees
// ordinary levels, whole, with each agent's share, clock offset and audit.
func TestSweepOverLoadAgents(t *testing.T) {
	camp := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(camp, []byte("host: sim\nmacro:\n  loadgen:\n    hosts:\n      - host: sim\n        procs: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.json")
	code, _, errs := sweepCLI(t, "-c", camp, "--concurrency", "1,4", "--requests", "12", "--warmup", "1",
		"--input-len", "8", "--output-len", "4", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Levels []struct {
			Concurrency, Completed int
			MedianTTFT             float64 `json:"median_ttft_ms"`
			Agents                 []struct {
				Agent     string
				Completed int
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Levels) != 2 {
		t.Fatalf("%d levels: %s", len(doc.Levels), b)
	}
	for i, want := range []int{1, 2} {
		l := doc.Levels[i]
		if l.Completed != 12 || l.MedianTTFT <= 0 || len(l.Agents) != want {
			t.Errorf("C=%d: completed %d, median TTFT %.2f, agents %+v: want 12 requests over %d agent(s)", l.Concurrency, l.Completed, l.MedianTTFT, l.Agents, want)
		}
	}
	if got := doc.Levels[1].Agents; len(got) == 2 && (got[0].Agent != "sim#0" || got[1].Agent != "sim#1" || got[0].Completed+got[1].Completed != 12) {
		t.Errorf("agents %+v", got)
	}
}

// A bad macro.loadgen.hosts entry, or hosts beside mode host, is one
// line naming the key, exit 2, before anything starts; --loadgen-hosts
// sets the key.
func TestSweepLoadAgentsBadInput(t *testing.T) {
	t.Parallel()
	camp := filepath.Join(t.TempDir(), "c.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"  loadgen:\n    hosts:\n      - procs: 2\n", "macro.loadgen.hosts: entry 1 names no host"},
		{"  loadgen:\n    hosts:\n      - host: gen1\n        procs: -1\n", "macro.loadgen.hosts"},
		{"  loadgen:\n    mode: host\n    hosts:\n      - host: gen1\n", "mode host and hosts together"},
		{"  loadgen:\n    hostz: [gen1]\n", "unknown key macro.loadgen.hostz"},
	} {
		if err := os.WriteFile(camp, []byte("server:\n  url: http://127.0.0.1:1\nmacro:\n"+c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := sweepCLI(t, "-c", camp)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q: want one line with %q, exit 2", c.yaml, code, errs, c.want)
		}
	}
	code, _, errs := sweepCLI(t, "--url", "http://127.0.0.1:1", "--loadgen-hosts", "gen1:x")
	if code != 2 || !strings.Contains(errs, "--loadgen-hosts") {
		t.Errorf("--loadgen-hosts gen1:x: exit %d, stderr %q", code, errs)
	}
}

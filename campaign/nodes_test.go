package campaign

import (
	"strings"
	"testing"
)

func TestHostsListMakesTheHeadTheHost(t *testing.T) {
	c, err := Parse([]byte("hosts: [gpu1, gpu2]\nserver:\n  worker_launch: vllm serve m --headless\n  logs: [/a.log, /b.log]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "gpu1" || c.NodeCount() != 2 || c.NodeLog(1) != "/b.log" || strings.Join(c.NodeSpecs(), ",") != "gpu1,gpu2" {
		t.Fatalf("host %q nodes %d log %q specs %v", c.Host, c.NodeCount(), c.NodeLog(1), c.NodeSpecs())
	}
	one, err := Parse([]byte("host: gpu7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if one.NodeCount() != 1 || one.NodeSpecs()[0] != "gpu7" || one.NodeLog(0) == "" {
		t.Fatalf("one host: %d %v", one.NodeCount(), one.NodeSpecs())
	}
	sim, err := Parse([]byte("host: sim\nsim:\n  nodes: 2\n  fault_node: 1\n  stall_at_gib: 75.8\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sim.NodeCount() != 2 || sim.SimFaultNode() != 1 || sim.HostOptions().SimNodes != 2 {
		t.Fatalf("sim nodes %d fault %d", sim.NodeCount(), sim.SimFaultNode())
	}
}

func TestHostsListRejects(t *testing.T) {
	for in, want := range map[string]string{
		"hosts: [gpu1, gpu1]\n":                          "listed twice",
		"host: gpu9\nhosts: [gpu1, gpu2]\n":              "both given",
		"hosts: [sim, gpu2]\n":                           "cannot be one of several",
		"hosts: [a, b]\nserver:\n  logs: [/x.log]\n":     "one per host",
		"host: sim\nsim:\n  nodes: 2\n  fault_node: 2\n": "sim.fault_node",
		"host: gpu1\nsim:\n  nodes: 2\n":                 "host: sim only",
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

package campaign

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/profdeck/profdeck/phases/load"
)

// validateHosts checks the hosts list and makes Host its head: one host:
// keeps working alone, and hosts: names every node, the head first.
func (c *Campaign) validateHosts(root *yaml.Node, bad func(key, format string, args ...any) error) error {
	if len(c.Hosts) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, h := range c.Hosts {
		if h == "" || strings.ContainsAny(h, " \t\n") {
			return bad("hosts", "%q: each must be an SSH target ([user@]host[:port] or an ~/.ssh/config alias)", h)
		}
		if seen[h] {
			return bad("hosts", "%q is listed twice", h)
		}
		seen[h] = true
		if (h == "sim" || h == "local") && len(c.Hosts) > 1 {
			return bad("hosts", "%q cannot be one of several nodes (for simulated nodes: host: sim with sim.nodes: N)", h)
		}
	}
	if lineOf(root, "host") > 0 && c.Host != c.Hosts[0] {
		return bad("host", "%q and hosts: %s both given; keep one (the head is the first of hosts)", c.Host, c.Hosts[0])
	}
	c.Host = c.Hosts[0]
	if n := len(c.Server.Logs); n > 0 && n != len(c.Hosts) {
		return bad("server.logs", "names %d logs for %d hosts: one per host, in the same order", n, len(c.Hosts))
	}
	return nil
}

// NodeSpecs are the nodes to open: hosts:, else the one host.
func (c *Campaign) NodeSpecs() []string {
	if len(c.Hosts) > 0 {
		return c.Hosts
	}
	return []string{c.Host}
}

// NodeCount is how many nodes the deployment has (simulated ones included).
func (c *Campaign) NodeCount() int {
	if len(c.Hosts) > 1 {
		return len(c.Hosts)
	}
	if c.Host == "sim" && c.Sim.Nodes > 1 {
		return c.Sim.Nodes
	}
	return 1
}

// SimFaultNode is the node the simulated stall or failure hits (-1: all).
func (c *Campaign) SimFaultNode() int {
	if c.Sim.FaultNode == nil {
		return -1
	}
	return *c.Sim.FaultNode
}

// NodeLog is node i's server log: server.logs[i] when given, else
// server.log (the same path on every node), else the default.
func (c *Campaign) NodeLog(i int) string {
	if i < len(c.Server.Logs) && c.Server.Logs[i] != "" {
		return c.Server.Logs[i]
	}
	if c.Server.Log != "" {
		return c.Server.Log
	}
	return load.DefaultLogPath
}

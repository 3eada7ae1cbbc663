package campaign

import (
	"net"
	"strings"

	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
)

// normalizeHosts makes Host the head of the hosts list: one host: keeps
// working alone, and hosts: names every node, the head first. A host: that
// differs from the head is left for validateHosts to refuse.
func (c *Campaign) normalizeHosts() {
	if len(c.Hosts) > 0 && lineOf(c.root, "host") == 0 {
		c.Host = c.Hosts[0]
	}
}

// validateHosts checks the hosts list.
func (c *Campaign) validateHosts() error {
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
	if c.Host != c.Hosts[0] && c.setBy["host"] == "" {
		return bad("host", "%q and hosts: %s both given; keep one (the head is the first of hosts)", c.Host, c.Hosts[0])
	}
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
	return DefaultLogPath
}

// HeadAddr is the head's address as the other nodes reach it:
// nccl.master_addr, else the head's host name without user and port
// (127.0.0.1 for simulated nodes).
func (c *Campaign) HeadAddr() string {
	if c.NCCL.MasterAddr != "" {
		return c.NCCL.MasterAddr
	}
	h := c.Host
	if c.Host == "sim" || c.Host == "local" {
		return "127.0.0.1"
	}
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		h = h[i+1:]
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return h
}

// NodeServer is the server's lifecycle on every node: the head (nodes[0])
// launched with server.launch, the others with server.worker_launch, each
// with its log.
func (c *Campaign) NodeServer(nodes []remote.Host) *load.Server {
	srv := c.NewServer(nodes[0])
	if len(nodes) > 1 {
		logs := make([]string, len(nodes))
		for i := range nodes {
			logs[i] = c.NodeLog(i)
		}
		load.NodeServers(srv, nodes, c.Server.WorkerLaunch, logs, c.HeadAddr())
	}
	return srv
}

// LoadNodes are the nodes the load group follows, each with its log.
func (c *Campaign) LoadNodes(nodes []remote.Host) []load.Node {
	out := make([]load.Node, len(nodes))
	for i, h := range nodes {
		out[i] = load.Node{Host: h, LogPath: c.NodeLog(i)}
	}
	return out
}

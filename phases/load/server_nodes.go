package load

import (
	"context"
	"strconv"

	"github.com/profdeck/profdeck/remote"
)

// The server's lifecycle on several nodes: the head's Server holds a Server
// per worker node (NodeServers), which Start, Stop and Restart walk.

// workersAlive reports whether a worker node's server still runs.
func (s *Server) workersAlive(ctx context.Context) bool {
	for _, w := range s.Workers {
		if _, alive := w.Running(ctx); alive {
			return true
		}
	}
	return false
}

// NodeServers makes head the head of a deployment on several nodes: one
// worker per other host, launched with worker (the campaign's
// server.worker_launch) and logging to logs[i] (or the head's log). Every
// node gets PROFDECK_NODE_RANK, PROFDECK_NNODES and PROFDECK_HEAD (the
// head's address as headAddr says) in the environment of its launch.
func NodeServers(head *Server, nodes []remote.Host, worker string, logs []string, headAddr string) {
	n := len(nodes)
	if n < 2 {
		return
	}
	env := func(i int) map[string]string {
		return map[string]string{"PROFDECK_NODE_RANK": strconv.Itoa(i), "PROFDECK_NNODES": strconv.Itoa(n), "PROFDECK_HEAD": headAddr}
	}
	head.Node, head.NodeEnv = nodes[0].Name(), env(0)
	if len(logs) > 0 && logs[0] != "" {
		head.Settings.Log = logs[0]
	}
	head.Workers = nil
	for i := 1; i < n; i++ {
		st := head.Settings
		st.Launch = worker
		if i < len(logs) && logs[i] != "" {
			st.Log = logs[i]
		}
		w := &Server{Host: nodes[i], Settings: st, ReleasedBelowGiB: head.ReleasedBelowGiB, StopTimeout: head.StopTimeout,
			Node: nodes[i].Name(), NodeEnv: env(i), head: head}
		head.Workers = append(head.Workers, w)
	}
}

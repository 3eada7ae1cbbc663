package sim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Several simulated nodes serve one model together (TP across nodes, as
// vLLM's --nnodes/--node-rank or Ray do): each node is a Deployment of its
// own, with its own GPUs, log and nvidia-smi. Node 0 is the head, the only
// one with the API server; the others run headless workers. The KV cache
// profiling after the weights is a collective, so no node passes it until
// every node has loaded its weights: a node that stalls or fails holds the
// others there, as on a real cluster.

// nodeState is what a node publishes to its peers without a lock.
type nodeState struct {
	atKV atomic.Bool // running and past its weights (waiting at, or beyond, the KV cache step)
}

// StartNodes starts n simulated nodes of opt.GPUs GPUs each, named sim0 …
// sim<n-1>, sim0 the head. FaultNode (when ≥ 0) keeps opt's stall and
// failure for that node alone; the others load normally. With n ≤ 1 it is
// Start with the name "sim".
func StartNodes(ctx context.Context, opt Options, n, faultNode int) ([]*Deployment, error) {
	if n <= 1 {
		d, err := Start(ctx, opt)
		if err != nil {
			return nil, err
		}
		return []*Deployment{d}, nil
	}
	if faultNode >= n {
		return nil, fmt.Errorf("sim: fault node %d: there are %d nodes (0-%d)", faultNode, n, n-1)
	}
	var ds []*Deployment
	for i := 0; i < n; i++ {
		o := opt
		o.Node, o.Nodes, o.NodeName = i, n, fmt.Sprintf("sim%d", i)
		o.Seed = opt.Seed + int64(i)*7919
		if faultNode >= 0 && i != faultNode {
			o.StallAtGiB, o.ProfilerStallAtGiB, o.FailWith = 0, 0, ""
		}
		d, err := Start(ctx, o)
		if err != nil {
			for _, p := range ds {
				_ = p.Close()
			}
			return nil, err
		}
		ds = append(ds, d)
	}
	for _, d := range ds {
		d.mu.Lock() // its ticker reads peers already
		d.peers = ds
		d.mu.Unlock()
	}
	return ds, nil
}

// headless reports whether this node runs workers only (no API server).
func (d *Deployment) headless() bool { return d.opt.Nodes > 1 && d.opt.Node > 0 }

// rankBase is the global rank of this node's first GPU.
func (d *Deployment) rankBase() int { return d.opt.Node * d.opt.GPUs }

// worldSize is the number of ranks across every node.
func (d *Deployment) worldSize() int {
	if d.opt.Nodes > 1 {
		return d.opt.Nodes * d.opt.GPUs
	}
	return d.opt.GPUs
}

// publishLocked tells the peers whether this node has reached the
// collective KV cache step.
func (d *Deployment) publishLocked(s *serverProc) {
	at := s != nil && s.running && !s.stalled && (s.next >= len(s.steps) || s.steps[s.next].at >= fracKV0)
	d.node.atKV.Store(at)
}

// peersBehind reports whether some other node has not reached the KV cache
// step (stalled, failed, stopped or still loading).
func (d *Deployment) peersBehind() bool {
	for _, p := range d.peers {
		if p != d && !p.node.atKV.Load() {
			return true
		}
	}
	return false
}

// holdAtCollectiveLocked keeps a node that reached the KV cache step waiting
// for its peers: its load clock does not advance while one is behind.
func (d *Deployment) holdAtCollectiveLocked(s *serverProc, now time.Time) {
	last := s.lastTick
	s.lastTick = now
	if len(d.peers) < 2 || last.IsZero() || s.next >= len(s.steps) || s.steps[s.next].at < fracKV0 {
		return
	}
	f := now.Sub(s.start).Seconds() / d.opt.LoadTime.Seconds()
	if f >= fracKV0 && d.peersBehind() {
		s.start = s.start.Add(now.Sub(last))
	}
}

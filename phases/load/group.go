package load

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// Node is one host of a deployment on several nodes and its server log.
type Node struct {
	Host    remote.Host
	LogPath string // default: the group configuration's LogPath
}

// Group follows a load on several nodes: one Watcher per node, all at once
// (each polls its own nvidia-smi and follows its own log), the head (the
// first node) alone asked GET /health. Every event it emits names its
// node; the load is one phase run: started when a node shows life, done
// when the head serves, failed or stalled when any node is.
type Group struct {
	cfg      Config
	nodes    []Node
	watchers []*Watcher
}

// NewGroup builds a group from the head's configuration (its Host and
// LogPath are replaced by each node's).
func NewGroup(cfg Config, nodes []Node) *Group {
	g := &Group{cfg: cfg, nodes: nodes}
	for i, n := range nodes {
		c := cfg
		c.Host, c.Node = n.Host, n.Host.Name()
		if n.LogPath != "" {
			c.LogPath = n.LogPath
		}
		c.PIDFile = ""
		if c.LogPath != "" && cfg.PIDFile != "" {
			c.PIDFile = c.LogPath + ".pid" // where Server.Start keeps each node's launch pid
		}
		if i > 0 {
			c.HealthURL = "" // only the head has an API server
		}
		g.watchers = append(g.watchers, NewWatcher(c))
	}
	return g
}

// Names are the nodes' host names, the head first.
func (g *Group) Names() []string {
	out := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		out[i] = n.Host.Name()
	}
	return out
}

// MarkStopped tells every node's watcher the server was stopped on purpose.
func (g *Group) MarkStopped() {
	for _, w := range g.watchers {
		w.MarkStopped()
	}
}

// MarkStarted tells every node's watcher a new start began.
func (g *Group) MarkStarted() {
	for _, w := range g.watchers {
		w.MarkStarted()
	}
}

// Diagnose asks every node for a diagnosis now.
func (g *Group) Diagnose() {
	for _, w := range g.watchers {
		w.Diagnose()
	}
}

// Run follows the load on every node until ctx ends.
func (g *Group) Run(ctx context.Context, em *phases.Emitter) error {
	_, err := g.loop(ctx, em, false)
	if ctxEnded(err) {
		return nil
	}
	return err
}

// Until follows the load until the head serves (ready), or a node fails or
// stalls: the ending names that node, and a stall's diagnosis is that
// node's.
func (g *Group) Until(ctx context.Context, em *phases.Emitter) (Ending, error) {
	return g.loop(ctx, em, true)
}

type nodeEnd struct {
	node int
	end  Ending
	err  error
}

func (g *Group) loop(parent context.Context, em *phases.Emitter, until bool) (Ending, error) {
	if len(g.watchers) == 0 {
		return Ending{}, errors.New("load: no nodes to watch")
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	events := make(chan nodeEvent, 256)
	ends := make(chan nodeEnd, len(g.watchers))
	var wg sync.WaitGroup
	for i, w := range g.watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make(chan phases.Event, 64)
			fwd := make(chan struct{})
			go func() {
				defer close(fwd)
				for ev := range out {
					select {
					case events <- nodeEvent{i, ev}:
					case <-ctx.Done():
					}
				}
			}()
			nem := &phases.Emitter{Out: out}
			if em != nil {
				nem.Now = em.Now
			}
			var end Ending
			var err error
			if until {
				end, err = w.Until(ctx, nem)
			} else {
				err = w.Run(ctx, nem)
			}
			close(out)
			<-fwd
			ends <- nodeEnd{i, end, err}
		}()
	}
	go func() { wg.Wait(); close(events) }()
	m := &merger{g: g, em: em, ctx: parent}
	for {
		select {
		case ne, ok := <-events:
			if !ok {
				return Ending{}, ctx.Err()
			}
			m.event(ne)
		case e := <-ends:
			if !until && e.err == nil {
				continue // Run: a node's watcher ends only with ctx
			}
			if end, done, err := m.ended(e); done {
				cancel()
				for ne := range events { // what the nodes sent before they ended
					m.event(ne)
				}
				m.finish(end, err)
				return end, err
			}
		}
	}
}

type nodeEvent struct {
	node int
	ev   phases.Event
}

// merger turns the nodes' events into the group's: each tagged with its
// node, the nodes' phase runs folded into one.
type merger struct {
	g   *Group
	em  *phases.Emitter
	ctx context.Context
	out phases.Brackets // the group's own phase run, as emitted
}

// emit sends one of the group's events, folding its brackets in.
func (m *merger) emit(kind string, data any) {
	m.out.Step(phases.Event{Kind: kind, Data: data})
	m.em.Emit(m.ctx, kind, data)
}

func (m *merger) event(ne nodeEvent) {
	name := m.g.nodes[ne.node].Host.Name()
	head := ne.node == 0
	switch d := ne.ev.Data.(type) {
	case phases.PhaseStarted:
		if !m.out.Open(phases.Load) {
			params := map[string]any{"hosts": m.g.Names(), "log": m.g.cfg.LogPath}
			if p, ok := d.Params.(map[string]any); ok {
				for k, v := range p {
					if k != "host" && k != "log" {
						params[k] = v
					}
				}
			}
			m.emit(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load, Params: params})
		}
	case phases.PhaseFinished:
		switch {
		case !m.out.Open(phases.Load):
		case d.Outcome == phases.OutcomeFailed:
			d.Err = "on " + name + ": " + d.Err
			m.emit(phases.KindSessionPhaseFinished, d)
		case head:
			m.emit(phases.KindSessionPhaseFinished, d)
		}
	case phases.NodeTagged:
		m.emit(ne.ev.Kind, d.WithNode(name))
	default:
		m.emit(ne.ev.Kind, ne.ev.Data)
	}
	if d, ok := ne.ev.Data.(phases.ServerEvent); ok && head && d.Action == "ready" {
		for _, w := range m.g.watchers[1:] {
			w.MarkReady()
		}
	}
}

// ended folds one node's Until ending: the head's readiness ends the
// group, and so does any node's failure or stall (named).
func (m *merger) ended(e nodeEnd) (Ending, bool, error) {
	name := m.g.nodes[e.node].Host.Name()
	if e.err != nil {
		if ctxEnded(e.err) {
			return Ending{}, true, e.err
		}
		return Ending{}, true, fmt.Errorf("node %s: %w", name, e.err)
	}
	switch e.end.Kind {
	case EndReady:
		if e.node != 0 {
			return Ending{}, false, nil
		}
		for _, w := range m.g.watchers[1:] {
			w.MarkReady()
		}
		e.end.Reason = "the head " + name + ": " + e.end.Reason
		return e.end, true, nil
	case EndFailed:
		e.end.Reason = "node " + name + ": " + e.end.Reason
	case EndStalled:
		// StallText names the node already.
	}
	return e.end, true, nil
}

// finish closes the group's phase run when Until ends it.
func (m *merger) finish(end Ending, err error) {
	if !m.out.Open(phases.Load) {
		return
	}
	fin := phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeDone}
	switch {
	case err != nil:
		fin.Outcome, fin.Err = phases.OutcomeCancelled, err.Error()
	case end.Kind != EndReady:
		fin.Outcome, fin.Err = phases.OutcomeFailed, end.Kind+": "+end.Reason
	}
	m.emit(phases.KindSessionPhaseFinished, fin)
}

package fleet

import (
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// steering passes the operator's pause, resume and stop to every agent of
// the level running, as a single sweep takes them mid-level: paused, no
// agent sends a new request (those in flight finish); stopped, every
// agent ends its level once its requests in flight are done. An agent
// that joins the level later is told the state it joins.
type steering struct {
	mu          sync.Mutex
	sws         []*onhost.Sweep // the level's agents, by share (nil: not started yet)
	running     bool            // a level runs
	paused      bool
	stopped     bool // the operator stopped the sweep
	stoppedMid  bool // … while a level ran
	pausedSince time.Time
	pausedTotal time.Duration // the level's time paused
	// A closed-loop level's concurrency, all agents together, and each
	// agent's share of it after a live change (nil: the level's own).
	target  int
	shares  []int
	started time.Time
	changes []change
}

// change is one live concurrency change of a level.
type change struct {
	from, to int
	at       time.Duration // since the level's start
}

// begin starts a level's steering: no agent yet, no time paused; c is its
// concurrency (0: an open loop, not steered).
func (s *steering) begin(c int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sws, s.running, s.stoppedMid, s.pausedTotal = nil, true, false, 0
	s.target, s.shares, s.changes, s.started = c, nil, nil, time.Now()
	if s.paused {
		s.pausedSince = time.Now()
	}
}

// end ends the level's steering and says how long it was paused, whether
// the operator stopped it before it ended, and its live concurrency
// changes.
func (s *steering) end() (paused time.Duration, stopped bool, changes []change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		s.pausedTotal += time.Since(s.pausedSince)
	}
	s.sws, s.running = nil, false
	return s.pausedTotal, s.stoppedMid, s.changes
}

// agents sets how many agents run the level's shares.
func (s *steering) agents(n int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sws = make([]*onhost.Sweep, n)
}

// add is agent i of the level, told the level's state.
func (s *steering) add(i int, sw *onhost.Sweep) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.sws) {
		s.sws[i] = sw
	}
	if s.paused {
		sw.Pause()
	}
	if i < len(s.shares) {
		sw.SetConcurrency(s.shares[i])
	}
	if s.stopped {
		sw.Stop()
	}
}

// setConcurrency changes a closed-loop level's concurrency while it runs
// (none runs: nothing changes): the new one is split over the level's
// agents as its start split it (c/N each, the remainder one apiece over
// the first). Every agent keeps at least one stream, so the level holds at
// least one per agent.
func (s *steering) setConcurrency(c int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.sws)
	if !s.running || s.target == 0 || n == 0 {
		return
	}
	if c = max(c, n); c == s.target {
		return
	}
	s.changes = append(s.changes, change{from: s.target, to: c, at: time.Since(s.started)})
	s.target, s.shares = c, SplitClosed(c, n)
	for i, sw := range s.sws {
		if sw != nil {
			sw.SetConcurrency(s.shares[i])
		}
	}
}

// concurrency is the level's concurrency now (0: none steered).
func (s *steering) concurrency() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target
}

func (s *steering) setPaused(p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == s.paused {
		return
	}
	s.paused = p
	switch {
	case p:
		s.pausedSince = time.Now()
	case s.running:
		s.pausedTotal += time.Since(s.pausedSince)
	}
	for _, sw := range s.sws {
		if p {
			sw.Pause()
		} else {
			sw.Resume()
		}
	}
}

func (s *steering) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.stoppedMid = s.stoppedMid || s.running
	for _, sw := range s.sws {
		sw.Stop()
	}
}

func (s *steering) state() (paused, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused, s.stopped
}

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
	sws         []*onhost.Sweep
	running     bool // a level runs
	paused      bool
	stopped     bool // the operator stopped the sweep
	stoppedMid  bool // … while a level ran
	pausedSince time.Time
	pausedTotal time.Duration // the level's time paused
}

// begin starts a level's steering: no agent yet, no time paused.
func (s *steering) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sws, s.running, s.stoppedMid, s.pausedTotal = nil, true, false, 0
	if s.paused {
		s.pausedSince = time.Now()
	}
}

// end ends the level's steering and says how long it was paused and
// whether the operator stopped it before it ended.
func (s *steering) end() (paused time.Duration, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		s.pausedTotal += time.Since(s.pausedSince)
	}
	s.sws, s.running = nil, false
	return s.pausedTotal, s.stoppedMid
}

// add is one agent of the level, told the level's state.
func (s *steering) add(sw *onhost.Sweep) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sws = append(s.sws, sw)
	if s.paused {
		sw.Pause()
	}
	if s.stopped {
		sw.Stop()
	}
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

package report

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// The phases that get a notebook section, in order.
var phaseOrder = []string{phases.Load, phases.Macro, phases.Micro, phases.NCCL, phases.Profile}

var phaseTitle = map[string]string{
	phases.Load:    "Load — weight loading",
	phases.Macro:   "Macro — concurrency sweep",
	phases.Micro:   "Micro — decode-step GEMMs",
	phases.NCCL:    "NCCL — collectives",
	phases.Profile: "Profile — torch profiler",
}

// phaseRun is one run of a phase: the events between its start and finish
// (or, for events sent without brackets, since the phase's first event).
type phaseRun struct {
	start, end time.Time
	finished   bool
	err        string
	outcome    string // phases.OutcomeDone, …; empty in older journals
	params     any
	events     []phases.Event
}

// classified is a journal sorted into what the notebook shows.
type classified struct {
	sessions []phases.SessionStarted
	system   *phases.SystemInfo
	systems  []phases.SystemInfo // one per host, in the order first gathered
	hosts    []string
	first    time.Time
	last     time.Time
	runs     map[string][]*phaseRun
	notes    map[string][]phases.Event // phase ("" when none) → notes and markers
	session  []phases.Event            // connection changes and errors
}

// normPhase maps a phase name or a pane title ("Macro", "Server/Load") to
// a phase ("" when none).
func normPhase(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range phaseOrder {
		if s == p {
			return p
		}
	}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == ' ' || r == '-' }) {
		for _, p := range phaseOrder {
			if w == p {
				return p
			}
		}
	}
	return ""
}

func classify(events []phases.Event) *classified {
	c := &classified{runs: map[string][]*phaseRun{}, notes: map[string][]phases.Event{}}
	open := phases.Brackets{Norm: normPhase} // a phase's open run is its last
	// A phase's events that come while none of its runs is open (a server
	// started just before the load's run is announced, a stop between two
	// loads) wait for its next run, rather than making a run of their own.
	pending := map[string][]phases.Event{}
	for _, ev := range events {
		if c.first.IsZero() || ev.Time.Before(c.first) {
			c.first = ev.Time
		}
		if ev.Time.After(c.last) {
			c.last = ev.Time
		}
		if c.sessionEvent(ev) {
			continue
		}
		if ch := open.Step(ev); ch.Name != "" && ch.Name != phases.RunBracket {
			p := ch.Name
			switch d := ev.Data.(type) {
			case phases.PhaseStarted:
				r := &phaseRun{start: ev.Time, params: d.Params, events: pending[p]}
				delete(pending, p)
				c.runs[p] = append(c.runs[p], r)
			case phases.PhaseFinished:
				// The run it closes, or the phase's last (a finish
				// with no start: one of its own when it has none).
				r := lastRun(c, p, ev.Time)
				r.end, r.finished, r.err, r.outcome = ev.Time, true, d.Err, d.Outcome
			}
			continue
		}
		p := normPhase(ev.Phase)
		if p == "" {
			continue
		}
		if open.Open(p) {
			rs := c.runs[p]
			rs[len(rs)-1].events = append(rs[len(rs)-1].events, ev)
		} else {
			pending[p] = append(pending[p], ev)
		}
	}
	// What no later run took belongs to the phase's last run (or to one
	// of its own, for journals that announce no runs).
	for _, p := range sortedPhases(pending) {
		evs := pending[p]
		r := lastRun(c, p, evs[0].Time)
		r.events = append(r.events, evs...)
	}
	return c
}

// sessionEvent files an event of the session rather than of a phase's
// run (its start, the system information, notes and markers, the link,
// errors) and reports whether it took it; a GPU sample only names its host.
func (c *classified) sessionEvent(ev phases.Event) bool {
	switch d := ev.Data.(type) {
	case phases.SessionStarted:
		c.sessions = append(c.sessions, d)
		c.addHost(d.Host)
	case phases.SystemInfo:
		s := d
		if c.system == nil || c.system.Host == d.Host || len(c.systems) == 0 {
			c.system = &s // the head's (the first host's) for the campaign-wide rows
		}
		c.addSystem(d)
		c.addHost(d.Host)
	case phases.Note:
		c.notes[normPhase(d.Pane)] = append(c.notes[normPhase(d.Pane)], ev)
	case phases.Marker:
		c.notes[normPhase(d.Pane)] = append(c.notes[normPhase(d.Pane)], ev)
	case phases.ConnState, phases.ErrorEvent:
		c.session = append(c.session, ev)
	case phases.GPUSample:
		c.addHost(d.Host)
		return false
	default:
		return false
	}
	return true
}

// addHost adds h to the hosts the journal names, once.
func (c *classified) addHost(h string) {
	if h == "" || slices.Contains(c.hosts, h) {
		return
	}
	c.hosts = append(c.hosts, h)
}

func sortedPhases(m map[string][]phases.Event) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// lastRun is the phase's latest run, or a new one starting at t.
func lastRun(c *classified, p string, t time.Time) *phaseRun {
	if rs := c.runs[p]; len(rs) > 0 {
		return rs[len(rs)-1]
	}
	r := &phaseRun{start: t}
	c.runs[p] = append(c.runs[p], r)
	return r
}

// addSystem keeps the latest system info of each host.
func (c *classified) addSystem(si phases.SystemInfo) {
	for i := range c.systems {
		if c.systems[i].Host == si.Host {
			c.systems[i] = si
			return
		}
	}
	c.systems = append(c.systems, si)
}

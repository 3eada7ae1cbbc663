package phases

import "sort"

// RunBracket is the name Brackets gives the campaign run (RunStarted to
// RunFinished).
const RunBracket = "run"

// Brackets folds events into what is open now: a phase from its
// PhaseStarted to its PhaseFinished, the campaign run (RunBracket) from
// RunStarted to RunFinished. It is the one place where a start is matched
// with its finish: the cockpit's running phases, the wait for phases to
// journal their end on quitting, a pane's runs of its phase begun
// elsewhere, the notebook's runs of each phase, the steps a journal says
// are done and stderr's progress lines read it. A second start of what is
// open keeps it open (the latest start is its start); a finish closes it,
// and a finish of what is not open closes nothing.
type Brackets struct {
	// Norm, when set, maps a phase's name to the name it is bracketed
	// under ("" leaves the event out: it opens and closes nothing). The
	// campaign run is always RunBracket.
	Norm func(string) string
	// Nested counts starts: each start of what is open needs a finish of
	// its own before it closes (runs of one phase side by side).
	Nested bool

	open  map[string]int   // name → starts not yet finished (1 unless Nested)
	start map[string]Event // name → its latest start, kept after its finish
}

// Change is what one event did: it opened Name (Opened) or closed it
// (a finish: Name set, Opened false); Name is "" for an event that is no
// start or finish.
type Change struct {
	Name   string
	Opened bool
	// Start is Name's latest start before the event (the start a finish
	// closes, when Name was open); the zero Event when it has none.
	Start Event
}

// Kind says whether ev is a start or a finish, and of what, without
// folding it in (name "" for neither).
func (b *Brackets) Kind(ev Event) (name string, start bool) {
	switch d := ev.Data.(type) {
	case PhaseStarted:
		return b.norm(d.Name), true
	case PhaseFinished:
		return b.norm(d.Name), false
	case RunStarted:
		return RunBracket, true
	case RunFinished:
		return RunBracket, false
	}
	return "", false
}

// Step folds ev in and says what it changed.
func (b *Brackets) Step(ev Event) Change {
	name, start := b.Kind(ev)
	if name == "" {
		return Change{}
	}
	if b.open == nil {
		b.open, b.start = map[string]int{}, map[string]Event{}
	}
	ch := Change{Name: name, Opened: start, Start: b.start[name]}
	switch {
	case start && b.Nested:
		b.open[name]++
	case start:
		b.open[name] = 1
	case b.open[name] > 1:
		b.open[name]--
	default:
		delete(b.open, name)
	}
	if start {
		b.start[name] = ev
	}
	return ch
}

// See folds ev in and returns the name it opened or closed ("" for an
// event that does neither).
func (b *Brackets) See(ev Event) (name string, opened bool) {
	ch := b.Step(ev)
	return ch.Name, ch.Opened
}

func (b *Brackets) norm(name string) string {
	if b.Norm == nil {
		return name
	}
	return b.Norm(name)
}

// Open reports whether name (a phase, or RunBracket) is open.
func (b *Brackets) Open(name string) bool { return b.open[name] > 0 }

// Names lists what is open, sorted.
func (b *Brackets) Names() []string {
	out := make([]string, 0, len(b.open))
	for n := range b.open {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

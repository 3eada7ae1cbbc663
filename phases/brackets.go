package phases

import "sort"

// RunBracket is the name Brackets gives the campaign run (RunStarted to
// RunFinished).
const RunBracket = "run"

// Brackets folds events into what is open now: a phase from its
// PhaseStarted to its PhaseFinished, the campaign run (RunBracket) from
// RunStarted to RunFinished. The cockpit's running phases and the wait
// for phases to journal their end on quitting read it.
type Brackets struct{ open map[string]bool }

// See folds ev in and returns the name it opened or closed ("" for an
// event that does neither).
func (b *Brackets) See(ev Event) (name string, opened bool) {
	switch d := ev.Data.(type) {
	case PhaseStarted:
		name, opened = d.Name, true
	case PhaseFinished:
		name = d.Name
	case RunStarted:
		name, opened = RunBracket, true
	case RunFinished:
		name = RunBracket
	default:
		return "", false
	}
	if b.open == nil {
		b.open = map[string]bool{}
	}
	if opened {
		b.open[name] = true
	} else {
		delete(b.open, name)
	}
	return name, opened
}

// Open reports whether name (a phase, or RunBracket) is open.
func (b *Brackets) Open(name string) bool { return b.open[name] }

// Names lists what is open, sorted.
func (b *Brackets) Names() []string {
	out := make([]string, 0, len(b.open))
	for n := range b.open {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

package campaignrun

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Span is when a step was done.
type Span struct {
	Started, Finished time.Time
	// Manual is true when the step was done by hand (a phase run from its
	// pane), not by a campaign run.
	Manual bool
	// Params are the parameters the step was done with (nil: not
	// recorded, a journal from before they were, or a phase run by hand).
	Params map[string]string
}

// ChangedSteps are the done steps whose recorded parameters differ from
// now's, each with what changed ("key: old → new", sorted by key). A step
// with none recorded, then or now, is taken as unchanged.
func ChangedSteps(done map[string]Span, now map[string]map[string]string) map[string][]string {
	out := map[string][]string{}
	for s, sp := range done {
		cur := now[s]
		if sp.Params == nil || cur == nil {
			continue // nothing to compare with
		}
		var ch []string
		for _, k := range slices.Sorted(maps.Keys(union(sp.Params, cur))) {
			if _, had := sp.Params[k]; !had && strings.HasPrefix(k, "sweep.") {
				continue // the sweep's workload was not recorded with the step then
			}
			if _, has := cur[k]; !has && k == SweepPlateauKey {
				continue // no plateau known now (a view without the journal's sweep): nothing to compare with
			}
			if o, n := sp.Params[k], cur[k]; o != n {
				ch = append(ch, fmt.Sprintf("%s: %s → %s", k, orNone(o), orNone(n)))
			}
		}
		if len(ch) > 0 {
			out[s] = ch
		}
	}
	return out
}

// SweepPlateauKey is the parameter of the steps measured at the sweep's
// plateau (micro at its batch, NCCL at its sizes, the profile there): the
// plateau they targeted. A sweep that finds another makes them out of date.
const SweepPlateauKey = "sweep.plateau"

// sweepSteps are the steps measured at the sweep's levels and plateau.
var sweepSteps = []string{Micro, NCCL, Profile}

// withPlateau is params with the plateau the sweep steps target (0: none
// known, nothing added).
func withPlateau(params map[string]map[string]string, plateau int) map[string]map[string]string {
	if plateau <= 0 {
		return params
	}
	out := maps.Clone(params)
	for _, s := range sweepSteps {
		if params[s] == nil {
			continue
		}
		p := maps.Clone(params[s])
		p[SweepPlateauKey] = strconv.Itoa(plateau)
		out[s] = p
	}
	return out
}

func union(a, b map[string]string) map[string]string {
	u := maps.Clone(a)
	maps.Copy(u, b)
	return u
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// DoneSteps reads a journal for the steps done for id: a run's step that
// ended done (the sweep's only with a level journalled), or a phase run by hand that ended well (a load that became
// ready, a sweep with at least one level, micro, NCCL, a profile, which
// implies the restart before it).
// The latest word on a step wins: a step done and later failed is not done.
// A run for another identity starts over: what was done before it is for
// another model, TP or launch command. Phases run by hand belong to the
// identity of the latest run before them (id when there is none).
func DoneSteps(events []phases.Event, id phases.RunIdentity) map[string]Span {
	done := map[string]Span{}
	mine := true
	started := map[string]time.Time{} // step → its start
	var phaseRuns phases.Brackets     // each phase's latest run's start
	levels := 0
	for _, ev := range events {
		ch := phaseRuns.Step(ev)
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			if d.Identity != id {
				clear(done)
				mine = false
			} else {
				mine = true
			}
		case phases.RunStep:
			if !mine {
				continue
			}
			switch d.State {
			case phases.StepStarted:
				started[d.Name] = ev.Time
			case phases.StepDone:
				if d.Name == Macro && levels == 0 {
					// A sweep whose levels never reached the journal
					// (they could not be written) is not done: nothing
					// of it would reach the notebook.
					delete(done, d.Name)
					continue
				}
				done[d.Name] = Span{Started: started[d.Name], Finished: ev.Time, Params: d.Params}
			default:
				delete(done, d.Name)
			}
		case phases.PhaseStarted:
			if ch.Name == phases.Macro {
				levels = 0
			}
		case phases.LevelResult:
			levels++
		case phases.PhaseFinished:
			if !mine || d.Err != "" || (d.Outcome != "" && d.Outcome != phases.OutcomeDone) {
				continue // failed or cancelled
			}
			sp := Span{Started: ch.Start.Time, Finished: ev.Time, Manual: true}
			switch d.Name {
			case phases.Load:
				markManual(done, Serve, sp) // a load followed to ready by hand
			case phases.Macro:
				if levels > 0 {
					markManual(done, Macro, sp)
				}
			case phases.Micro:
				markManual(done, Micro, sp)
			case phases.NCCL:
				markManual(done, NCCL, sp)
			case phases.Profile:
				markManual(done, Restart, sp)
				markManual(done, Profile, sp)
			}
		}
	}
	return done
}

// markManual counts a phase run by hand as its step done, unless a run's
// own record of the step is there already (the run brackets the same phase
// events).
func markManual(done map[string]Span, step string, sp Span) {
	if d, ok := done[step]; ok && !d.Manual {
		return
	}
	done[step] = sp
}

// owner follows whose a journal's events are: a run's events belong to its
// identity, phases run by hand to the identity of the latest run before
// them (id when there is none), as DoneSteps reads them.
type owner struct {
	id   phases.RunIdentity
	mine bool
}

// see takes one event and reports whether it belongs to id; a run for
// another identity also reports that what came before is void (reset).
func (o *owner) see(ev phases.Event) (mine, reset bool) {
	if d, ok := ev.Data.(phases.RunStarted); ok {
		o.mine = d.Identity == o.id
		return o.mine, !o.mine
	}
	return o.mine, false
}

// sweepFold keeps what the latest sweep for one identity found: its
// plateau, its closed-loop levels and the engine's mean tokens per step at
// each. A later sweep for the identity replaces it (no plateau when that
// sweep found none), a run for another identity voids it.
type sweepFold struct {
	owner
	plateau    int
	levels     []int
	stepTokens map[int]float64
}

func newSweepFold(id phases.RunIdentity) *sweepFold {
	return &sweepFold{owner: owner{id: id, mine: true}}
}

func (f *sweepFold) see(ev phases.Event) {
	mine, reset := f.owner.see(ev)
	switch d := ev.Data.(type) {
	case phases.PhaseStarted:
		reset = reset || mine && d.Name == phases.Macro
	case phases.Plateau:
		if mine {
			f.plateau = d.Concurrency
		}
	case phases.LevelResult:
		if mine && d.Rate == 0 && d.Concurrency > 0 {
			f.levels = append(f.levels, d.Concurrency)
			if d.Server != nil && d.Server.StepMix != nil {
				if f.stepTokens == nil {
					f.stepTokens = map[int]float64{}
				}
				f.stepTokens[d.Concurrency] = d.Server.StepMix.TokensPerStep
			}
		}
	}
	if reset {
		f.plateau, f.levels, f.stepTokens = 0, nil, nil
	}
}

// PlateauTracker follows, event by event, the plateau of the latest sweep
// for one identity, as a run reads it from its journal (a pane fed the
// journal and then live events uses it so that it captures what a run would).
type PlateauTracker struct{ f *sweepFold }

// NewPlateauTracker follows the plateau for id.
func NewPlateauTracker(id phases.RunIdentity) *PlateauTracker {
	return &PlateauTracker{f: newSweepFold(id)}
}

// See takes the next event.
func (p *PlateauTracker) See(ev phases.Event) { p.f.see(ev) }

// Plateau is the concurrency of the plateau so far (0: none). It is as the
// events say: check it before use (profile.CheckLevels).
func (p *PlateauTracker) Plateau() int { return p.f.plateau }

// JournalPlateau is the concurrency of the plateau the journal's latest
// sweep for id found (0: none). A sweep for another model, TP or launch
// command does not count, nor one before a run for another identity. The
// value is as the journal says: check it before use (profile.CheckLevels).
func JournalPlateau(events []phases.Event, id phases.RunIdentity) int {
	p := NewPlateauTracker(id)
	for _, ev := range events {
		p.See(ev)
	}
	return p.Plateau()
}

// plateau is the plateau of the latest sweep the run knows of (0: none).
func (r *runner) plateau() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sweep.plateau
}

// stepsAfter is those of steps that come after step in plan: the ones a
// run can still do once step is done (in the one-load order micro and NCCL
// come before the sweep, timed at every batch it can reach).
func stepsAfter(plan []string, step string, steps []string) []string {
	at := -1
	for i, s := range plan {
		if s == step {
			at = i
		}
	}
	var out []string
	for _, s := range steps {
		for i, p := range plan {
			if p == s && at >= 0 && i > at {
				out = append(out, s)
			}
		}
	}
	return out
}

// afterSweep takes the sweep this run just did: the steps done earlier at
// another workload or plateau than it found are out of date. It says so
// (RunChanged) and, unless --keep, does them again; it returns the steps
// to do.
func (r *runner) afterSweep(plan []string, done map[string]Span, redo map[string]bool, changed map[string][]string, todo map[string]bool) map[string]bool {
	r.settle() // the plateau's event is seen
	now := ChangedSteps(done, withPlateau(r.cfg.Params, r.plateau()))
	fresh := map[string][]string{}
	for _, s := range stepsAfter(plan, Macro, sweepSteps) {
		if ch := now[s]; len(ch) > 0 && !todo[s] && changed[s] == nil {
			fresh[s], changed[s] = ch, ch
		}
	}
	if len(fresh) == 0 {
		return todo
	}
	r.emit(phases.KindRunChanged, phases.RunChanged{Changed: fresh, Kept: r.cfg.Keep})
	if r.cfg.Keep {
		return todo
	}
	for s := range fresh {
		redo[s] = true
	}
	t := r.todo(plan, done, redo)
	r.need = needOf(t, r.cfg.Order)
	return t
}

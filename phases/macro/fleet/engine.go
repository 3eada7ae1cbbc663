package fleet

import (
	"context"
	"errors"
	"maps"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// Engine is a macro sweep whose levels each run over several load agents
// (RunClosed, RunOpen) and are merged into one level: a macro.Engine. The
// operator's steering reaches every agent mid-level, as a single sweep
// takes it: a pause stops new requests on every agent (those in flight
// finish) and holds the next level back; a stop ends the level running
// once its requests in flight are done, marked partial, and the sweep.
type Engine struct {
	cfg     macro.Config
	members []Member
	params  map[string]any
	steer   steering
	resume  chan struct{}
}

var _ macro.Engine = (*Engine)(nil)

// NewEngine checks cfg as macro.NewSweep does and prepares its levels'
// run over members.
func NewEngine(cfg macro.Config, members []Member) (*Engine, error) {
	if len(members) == 0 {
		return nil, errors.New("no load agents")
	}
	sw, err := macro.NewSweep(cfg)
	if err != nil {
		return nil, err
	}
	p := maps.Clone(sw.Params())
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = agentName(m.Name, i)
	}
	p["loadgen"], p["loadgen_agents"] = "agents", names
	return &Engine{cfg: sw.Config(), members: members, params: p, resume: make(chan struct{}, 1)}, nil
}

// Config is the sweep's configuration.
func (e *Engine) Config() macro.Config { return e.cfg }

// Pause stops new requests on every agent of the level running (those in
// flight finish) and holds the next level back until Resume.
func (e *Engine) Pause() { e.steer.setPaused(true) }

// Resume sends again after Pause.
func (e *Engine) Resume() {
	e.steer.setPaused(false)
	e.wake()
}

func (e *Engine) wake() {
	select {
	case e.resume <- struct{}{}:
	default:
	}
}

// Paused reports whether the sweep is paused.
func (e *Engine) Paused() bool { p, _ := e.steer.state(); return p }

// SetConcurrency changes the closed-loop level running, live, on every
// agent: the new concurrency is split over them as the level's start split
// it, each keeping at least one stream (so no lower than the level's
// agents). Raising it sends more at once; lowering it lets the extra
// requests finish. The level notes the change; later levels keep their
// configured concurrency.
func (e *Engine) SetConcurrency(n int) { e.steer.setConcurrency(n) }

// Concurrency is the level's concurrency, all agents together (0: an
// open-loop level, or none yet).
func (e *Engine) Concurrency() int { return e.steer.concurrency() }

// Stop ends the level running on every agent once its requests in flight
// are done (the level is kept, marked partial), and the sweep with it.
func (e *Engine) Stop() { e.steer.stop(); e.wake() }

func (e *Engine) stopping() bool { _, s := e.steer.state(); return s }

// Run runs the sweep's levels one after the other over the agents,
// emitting each merged level as a single sweep does.
func (e *Engine) Run(ctx context.Context, em *phases.Emitter) (res *macro.Result, err error) {
	err = phases.Run(ctx, em, phases.Macro, e.params, func(ctx context.Context) error {
		res, err = e.run(ctx, em)
		return err
	})
	return res, err
}

// step is one level of the sweep: a concurrency, or an open-loop rate.
type step struct {
	c    int
	rate float64
}

func (e *Engine) steps() []step {
	if e.cfg.Rate > 0 {
		return []step{{rate: e.cfg.Rate}}
	}
	out := make([]step, len(e.cfg.Concurrency))
	for i, c := range e.cfg.Concurrency {
		out[i] = step{c: c}
	}
	return out
}

func (e *Engine) run(ctx context.Context, em *phases.Emitter) (*macro.Result, error) {
	var res *macro.Result
	for _, s := range e.steps() {
		if err := e.waitResumed(ctx); err != nil {
			return res, err
		}
		em.Emit(ctx, phases.KindMacroLevelStarted, &phases.LevelStarted{Concurrency: s.c, Rate: s.rate,
			Requests: e.cfg.Requests, DurationS: e.cfg.Duration.Seconds()})
		e.steer.begin(s.c)
		lv, err := e.level(ctx, s, em)
		paused, stopped, changes := e.steer.end()
		if res == nil {
			res = e.template(lv)
		}
		lv.OperatorStop = stopped && !lv.Stopped
		lv.Partial = lv.Partial || lv.OperatorStop
		lr := lv.LevelResult(s.c, s.rate)
		steered(&lr, changes)
		if paused > 0 {
			note, steered := phases.Paused(paused.Seconds())
			lr.Notes, lr.Steered = append(lr.Notes, note), append(lr.Steered, steered)
		}
		lr.MonotonePercentiles()
		res.Levels = append(res.Levels, lr)
		em.Emit(ctx, phases.KindMacroLevel, &lr)
		if err != nil || ctx.Err() != nil {
			return res, errors.Join(err, ctx.Err())
		}
		if e.stopping() {
			res.Stopped = "stopped by the operator"
			break
		}
	}
	if res != nil {
		res.Warnings = append(res.Warnings, levelWarnings(res.Levels)...)
		if res.Plateau = macro.PlateauOf(res.Levels); res.Plateau != nil {
			em.Emit(ctx, phases.KindMacroPlateau, res.Plateau)
		}
	}
	return res, nil
}

func (e *Engine) level(ctx context.Context, s step, em *phases.Emitter) (Level, error) {
	tk := &ticker{em: em, conc: s.c, reqs: e.cfg.Requests, dur: e.cfg.Duration, st: &e.steer}
	if s.rate > 0 {
		return runOpen(ctx, e.cfg, s.rate, e.members, &e.steer, tk)
	}
	return runClosed(ctx, e.cfg, s.c, e.members, &e.steer, tk)
}

// steered says a level's live concurrency changes as a single sweep says
// them (the agents' own notes of their shares' changes are left out), and
// the level reports the concurrency it ended at, as a single sweep does.
func steered(lr *phases.LevelResult, changes []change) {
	for _, c := range changes {
		note, steered := phases.LiveChange(c.from, c.to, c.at.Seconds())
		lr.Notes, lr.Steered = append(lr.Notes, note), append(lr.Steered, steered)
		lr.Concurrency = c.to
	}
}

// template is the sweep's result before its levels: the first agent's
// that came back (its server, model, preflight), else the configuration's.
func (e *Engine) template(lv Level) *macro.Result {
	for _, a := range lv.Agents {
		if a.Result != nil {
			r := *a.Result
			r.Levels, r.Plateau, r.Stopped = nil, nil, ""
			r.Warnings = sweepWarnings(ownWarnings(r.Warnings, len(e.members)))
			return &r
		}
	}
	c := e.cfg
	return &macro.Result{URL: c.URL, Model: c.Model, API: c.API, InputLen: c.InputLen, OutputLen: c.OutputLen,
		Requests: c.Requests, DurationS: c.Duration.Seconds(), Warmup: c.Warmup, Rate: c.Rate, LatencyFrom: c.LatencyFrom}
}

// waitResumed waits while the sweep is paused.
func (e *Engine) waitResumed(ctx context.Context) error {
	for e.Paused() && !e.stopping() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.resume:
		}
	}
	return ctx.Err()
}

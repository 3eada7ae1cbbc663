package campaignrun

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor"
	"github.com/profdeck/profdeck/remote"
)

// Server modes the runner tracks between steps.
const (
	modeUnknown  = ""
	modeServing  = "serving"
	modeProfiler = "profiler"
	modeStopped  = "stopped"
	modeBroken   = "broken" // a load failed or stalled: the process may still be there
)

// runner is one Run's state.
type runner struct {
	cfg Config
	out *phases.Emitter
	em  *phases.Emitter // what the phases emit into: seen here, then passed on
	ch  chan phases.Event
	wg  sync.WaitGroup

	mu sync.Mutex
	// What the latest sweep for the run's identity found (this run's, or
	// the journal's): the plateau, the levels, the tokens per step.
	sweep   *sweepFold
	version string // the server's vLLM version, as its log or /version said
	engine  string // the engine the server's log shows, "" until known

	mode      string // the server as the last step left it
	touched   bool   // a step of this run started, stopped or restarted the server
	endReason string // set when a step ends the run (the first load failed)
	skipNext  map[string]string
	need      doctor.Need // what the steps to do need, for the doctor
	// profileToDo is true when the run profiles: the one-load order's
	// serve step then launches with the profiler configured.
	profileToDo bool
}

func newRunner(cfg Config, out *phases.Emitter) *runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &runner{cfg: cfg, out: out, ch: make(chan phases.Event, 256), skipNext: map[string]string{}}
	r.em = &phases.Emitter{Out: r.ch, Now: cfg.Now}
	r.version = cfg.Version
	r.sweep = newSweepFold(cfg.Identity)
	for _, ev := range BaselineEvents(cfg.Prior) {
		r.see(ev)
	}
	r.wg.Add(1)
	go r.tee()
	return r
}

// tee passes every event on, after noting what later steps need from it.
// Nothing is dropped: the receiver of out is expected to keep reading.
func (r *runner) tee() {
	defer r.wg.Done()
	inVariant := false // a variant's sweep is not the baseline's
	for ev := range r.ch {
		if b, ok := ev.Data.(phases.Barrier); ok {
			b.Release()
			continue
		}
		switch ev.Kind {
		case phases.KindVariantStarted:
			inVariant = true
		case phases.KindVariantFinished:
			inVariant = false
		}
		if !inVariant {
			r.see(ev)
		}
		r.out.Emit(context.Background(), ev.Kind, ev.Data)
	}
}

func (r *runner) see(ev phases.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep.see(ev)
	if d, ok := ev.Data.(phases.Milestone); ok && d.Stage == "vllm_version" && r.cfg.Version == "" && d.Value != "" && r.sweep.mine {
		r.version = d.Value
	}
	if d, ok := ev.Data.(phases.DoctorCheck); ok && r.version == "" {
		r.version = DoctorVersion(d) // the installed vLLM picks the profiler's flags of the one load
	}
	if d, ok := ev.Data.(phases.LoadState); ok && d.Engine != "" && r.sweep.mine {
		r.engine = d.Engine // the engine the server's log shows
	}
}

// settle waits until the events sent so far are seen and passed on: a
// barrier through the runner's own channel, released by tee.
func (r *runner) settle() {
	phases.Sync(context.Background(), r.ch, nil)
}

func (r *runner) close() {
	close(r.ch)
	r.wg.Wait()
}

func (r *runner) emit(kind string, data any) {
	r.em.Emit(context.Background(), kind, data)
}

// stepFunc does one step; it returns the step's end state and reason.
type stepFunc func(ctx context.Context) (state, reason string)

func (r *runner) funcs() map[string]stepFunc {
	serve := r.serve
	if r.cfg.Order == OrderOneLoad {
		serve = r.serveProfiled
	}
	return map[string]stepFunc{
		Doctor: r.doctor, Serve: serve, Macro: r.macro, FreeGPUs: r.freeGPUs, Micro: r.micro, NCCL: r.nccl,
		Restart: r.restart, Profile: r.profile, LeaveServer: r.leave,
	}
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	plan := r.plan()
	done := DoneSteps(BaselineEvents(r.cfg.Prior), r.cfg.Identity)
	redo := expandRedo(r.cfg.Redo)
	changed := ChangedSteps(done, withPlateau(r.cfg.Params, r.plateau()))
	if !r.cfg.Keep {
		for s := range changed {
			redo[s] = true
		}
	}
	todo := r.todo(plan, done, redo)
	r.need = needOf(todo, r.cfg.Order)
	r.profileToDo = todo[Profile]
	res := &Result{}
	var resumed []string
	for _, s := range plan {
		if !todo[s] {
			resumed = append(resumed, s)
		}
	}
	r.emit(phases.KindRunStarted, phases.RunStarted{Identity: r.cfg.Identity, Steps: plan, Resumed: resumed, Redo: r.cfg.Redo,
		Changed: changed, Kept: r.cfg.Keep && len(changed) > 0})
	fns := r.funcs()
	for _, s := range plan {
		switch {
		case s == Notebook:
			r.variants(ctx, res)
			res.Steps = append(res.Steps, r.notebook(ctx, res))
		case !todo[s]:
			reason := "done earlier (journal)"
			if ch := changed[s]; len(ch) > 0 {
				reason = "done earlier with other parameters, kept (--keep): " + strings.Join(ch, "; ")
			}
			res.Steps = append(res.Steps, StepResult{Name: s, State: phases.StepDone, Started: done[s].Started,
				Finished: done[s].Finished, Reason: reason, Earlier: true})
		case ctx.Err() != nil:
			res.Steps = append(res.Steps, StepResult{Name: s, State: phases.StepPending, Reason: "not reached: the run was interrupted"})
		case r.endReason != "":
			res.Steps = append(res.Steps, r.skip(s, r.endReason))
		case r.skipNext[s] != "":
			res.Steps = append(res.Steps, r.skip(s, r.skipNext[s]))
		default:
			res.Steps = append(res.Steps, r.step(ctx, s, fns[s]))
			if s == Macro && res.Steps[len(res.Steps)-1].State == phases.StepDone {
				todo = r.afterSweep(plan, done, redo, changed, todo)
			}
		}
	}
	r.settle()
	r.mu.Lock()
	res.Plateau = r.sweep.plateau
	r.mu.Unlock()
	res.Interrupted = ctx.Err() != nil
	r.emit(phases.KindRunFinished, phases.RunFinished{Notebook: res.Notebook, Interrupted: res.Interrupted})
	if res.Interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// todo says which steps of plan this run does: those not done (or named by
// --redo), and the server steps a later step needs (the sweep needs a
// serving server, micro and NCCL free GPUs, the profile a restart with the
// profiler). The server is left as asked only when this run changed it.
func (r *runner) todo(plan []string, done map[string]Span, redo map[string]bool) map[string]bool {
	in := map[string]bool{}
	for _, s := range plan {
		in[s] = true
	}
	t := map[string]bool{}
	for _, s := range plan {
		_, d := done[s]
		t[s] = !d || redo[s]
	}
	needs := map[string][]string{Serve: {Macro}, FreeGPUs: {Micro, NCCL}, Restart: {Profile}}
	if r.cfg.Order == OrderOneLoad {
		needs[Serve] = []string{Macro, Profile} // the load the profile shares
	}
	for step, deps := range needs {
		for _, d := range deps {
			if in[step] && t[d] {
				t[step] = true
			}
		}
	}
	t[LeaveServer] = in[LeaveServer] && (t[Serve] || t[FreeGPUs] || t[Restart] || redo[LeaveServer])
	t[Notebook] = true
	t[Doctor] = in[Doctor] // checked on every run: the host may have changed
	return t
}

// redoSteps are the steps a phase named by --redo does again.
var redoSteps = map[string][]string{
	phases.Load: {Serve}, phases.Macro: {Macro}, phases.Micro: {Micro}, phases.NCCL: {NCCL},
	phases.Profile: {Restart, Profile},
}

// expandRedo turns phase names into their steps.
func expandRedo(words []string) map[string]bool {
	out := map[string]bool{}
	for _, w := range words {
		out[w] = true
		for _, s := range redoSteps[w] {
			out[s] = true
		}
	}
	return out
}

// step runs one step between its started and finished events. A step cut
// short by ctx is "stopped": its phase has journalled what it gathered.
func (r *runner) step(ctx context.Context, name string, fn stepFunc) StepResult {
	res := StepResult{Name: name, Started: r.cfg.Now()}
	r.emit(phases.KindRunStep, phases.RunStep{Name: name, State: phases.StepStarted})
	state, reason := fn(ctx)
	if ctx.Err() != nil && state != phases.StepDone {
		state, reason = phases.StepStopped, "interrupted: what it gathered is kept"
	}
	reason = remote.ScrubSecrets(reason) // a reason quotes URLs, errors and log lines
	res.State, res.Reason, res.Finished = state, reason, r.cfg.Now()
	ev := phases.RunStep{Name: name, State: state, Reason: reason}
	if state == phases.StepDone {
		ev.Params = withPlateau(r.cfg.Params, r.plateau())[name]
	}
	r.emit(phases.KindRunStep, ev)
	return res
}

func (r *runner) skip(name, reason string) StepResult {
	now := r.cfg.Now()
	reason = remote.ScrubSecrets(reason)
	r.emit(phases.KindRunStep, phases.RunStep{Name: name, State: phases.StepSkipped, Reason: reason})
	return StepResult{Name: name, State: phases.StepSkipped, Started: now, Finished: now, Reason: reason}
}

// notebook writes the notebook, also after an interruption (with a context
// of its own, so what was gathered reaches it).
func (r *runner) notebook(ctx context.Context, res *Result) StepResult {
	if r.cfg.WriteNotebook == nil {
		return r.skip(Notebook, "no notebook configured")
	}
	ctx = context.WithoutCancel(ctx)
	return r.step(ctx, Notebook, func(ctx context.Context) (string, string) {
		r.settle() // everything so far, this step's start included, reaches the notebook
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		path, err := r.cfg.WriteNotebook(wctx)
		if err != nil {
			return phases.StepFailed, err.Error()
		}
		res.Notebook = path
		return phases.StepDone, path
	})
}

// errText is an error's text, or "interrupted" for a cancelled context.
func errText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return err.Error()
}

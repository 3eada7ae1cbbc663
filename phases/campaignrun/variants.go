package campaignrun

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// BaselineEvents are the events outside every variant's part of a journal
// (between its variant.started and variant.finished): the baseline's, which
// the baseline's steps, their resumption and its sweep read.
func BaselineEvents(events []phases.Event) []phases.Event {
	var out []phases.Event
	in := false
	for _, ev := range events {
		switch ev.Kind {
		case phases.KindVariantStarted:
			in = true
			continue
		case phases.KindVariantFinished:
			in = false
			continue
		}
		if !in {
			out = append(out, ev)
		}
	}
	return out
}

// VariantsDone are the variants a journal has finished (done, failed or
// stalled: each had its turn); one cut short (stopped, or without its
// variant.finished) is not among them.
func VariantsDone(events []phases.Event) map[string]bool {
	done := map[string]bool{}
	for _, ev := range events {
		if f, ok := ev.Data.(phases.VariantFinished); ok && f.State != phases.StepStopped {
			done[f.Name] = true
		}
	}
	return done
}

// variants serves each variant not done earlier in turn: its prediction,
// its launch (the baseline's with its args, or its own), its load, its
// steps. A variant whose load fails or stalls is finished with the load's
// reason as evidence and the run goes on with the next.
func (r *runner) variants(ctx context.Context, res *Result) {
	if len(r.cfg.Variants) == 0 || r.endReason != "" {
		return
	}
	done := VariantsDone(r.cfg.Prior)
	baseline := r.cfg.Server.Settings
	order := OrderVariants(baseline.Launch, r.cfg.Variants)
	planned := phases.VariantPlanned{Variants: order}
	for _, v := range order {
		if done[v.Name] {
			planned.Done = append(planned.Done, v.Name)
		}
	}
	r.emit(phases.KindVariantPlanned, planned)
	defer func() { r.cfg.Server.Settings = baseline }()
	var serving *phases.VariantSpec // the variant whose load serves now
	for _, v := range order {
		if done[v.Name] || ctx.Err() != nil {
			continue
		}
		shared := SharesLoad(baseline.Launch, serving, v) && r.mode == modeServing
		fin, steps := r.variant(ctx, baseline.Launch, v, shared, serving)
		res.Variants = append(res.Variants, fin)
		res.Steps = append(res.Steps, steps...)
		serving = nil
		if steps[0].State == phases.StepDone {
			serving = &v
		}
	}
}

// variant serves one variant and runs its steps; its steps' results are
// its load (a serve step) and each step it ran, named by the variant.
// A variant that shares the load of the one served before it (the same
// launch and environment) is not served again.
func (r *runner) variant(ctx context.Context, baselineLaunch string, v phases.VariantSpec, shared bool, prev *phases.VariantSpec) (phases.VariantFinished, []StepResult) {
	if r.cfg.Predict != nil {
		p := r.cfg.Predict(v)
		p.Variant = v.Name
		r.emit(phases.KindVariantPredicted, p)
	}
	launch := phases.VariantLaunch(baselineLaunch, v)
	r.cfg.Server.Settings.Launch = launch
	env := maps.Clone(r.cfg.Server.Settings.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, v.Env)
	r.cfg.Server.Settings.Env = env
	started := phases.VariantStarted{Spec: redactSpec(v), Launch: remote.ScrubSecrets(launch), Env: envLines(v.Env)}
	if shared {
		started.SharesLoadOf = prev.Name
	}
	r.emit(phases.KindVariantStarted, started)
	fin := phases.VariantFinished{Name: v.Name, State: phases.StepDone}
	r.touched = true
	load := StepResult{Name: Serve, Variant: v.Name, Started: r.cfg.Now()}
	switch {
	case shared:
		load.State, load.Reason = phases.StepDone, sharedReason(prev.Name)
	case slices.Contains(r.variantSteps(), Profile):
		flags, penv, _ := r.profilerArgs() // the profile needs the profiler configured at launch
		load.State, load.Reason = r.restartAndFollow(ctx, flags, penv, modeServing, "serving "+v.Name+" with the profiler configured")
	default:
		load.State, load.Reason = r.restartAndFollow(ctx, nil, nil, modeServing, "serving "+v.Name)
	}
	load.Reason, load.Finished = remote.ScrubSecrets(load.Reason), r.cfg.Now()
	if load.State != phases.StepDone {
		fin.State, fin.Evidence = load.State, load.Reason
	}
	steps := []StepResult{load}
	for _, s := range r.variantSteps() {
		if fin.State != phases.StepDone || ctx.Err() != nil {
			break
		}
		st := r.step(ctx, s, r.funcs()[s])
		st.Variant = v.Name
		steps = append(steps, st)
		if st.State != phases.StepDone {
			fin.State, fin.Evidence = st.State, st.Reason
		}
	}
	if ctx.Err() != nil {
		fin.State, fin.Evidence = phases.StepStopped, "interrupted: the variant is served again on the next run"
	}
	r.emit(phases.KindVariantFinished, fin)
	return fin, steps
}

// variantSteps are the steps each variant runs (Config.VariantSteps, else
// the sweep).
func (r *runner) variantSteps() []string {
	if len(r.cfg.VariantSteps) == 0 {
		return []string{Macro}
	}
	return r.cfg.VariantSteps
}

func redactSpec(v phases.VariantSpec) phases.VariantSpec {
	v.Launch = remote.ScrubSecrets(v.Launch)
	if v.Env != nil {
		v.Env = maps.Clone(v.Env)
		for k, val := range v.Env {
			v.Env[k] = strings.TrimPrefix(remote.ScrubSecrets(k+"="+val), k+"=")
		}
	}
	return v
}

// envLines are the variant's environment as sorted NAME=value lines,
// redacted.
func envLines(env map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, remote.ScrubSecrets(k+"="+env[k]))
	}
	return out
}

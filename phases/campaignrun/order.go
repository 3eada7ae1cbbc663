package campaignrun

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// The orders a run takes its steps in (run.order, run --order).
const (
	// OrderOneLoad frees the GPUs first, times the GEMMs and the
	// collectives, then loads once with the torch profiler configured
	// (idle until the profile asks): the sweep and the profile share the
	// load. The default wherever the run launches the server.
	OrderOneLoad = "one-load"
	// OrderClassic serves, sweeps, stops the server for micro and NCCL,
	// restarts it with the profiler, profiles and restarts it as asked:
	// three loads, for engines whose profiler cannot be set at launch.
	OrderClassic = "classic"
)

// StepsOneLoad lists the steps of the one-load order.
var StepsOneLoad = []string{Doctor, FreeGPUs, Micro, NCCL, Serve, Macro, Profile, LeaveServer, Notebook}

// StepsFor lists the steps of an order ("" is the classic order: a
// Config that names none).
func StepsFor(order string) []string {
	if order == OrderOneLoad {
		return StepsOneLoad
	}
	return Steps
}

// OrderFor is the order a run gets and why: classic when asked, or when
// the campaign has no launch command (the server is not started by the
// run, so no profiler can be set at its launch); one-load otherwise.
func OrderFor(asked, launch string) (string, string) {
	switch {
	case asked == OrderClassic:
		return OrderClassic, "asked for (run.order or --order): three loads, the profiler set by a restart"
	case strings.TrimSpace(launch) == "":
		return OrderClassic, "server.launch is empty: the run cannot set the profiler at a launch of its own"
	}
	return OrderOneLoad, "micro and NCCL on free GPUs first, then one load with the torch profiler configured (idle until the profile)"
}

// Loads counts the steps of plan that load the model, when done: the
// serve step (when the server is not already up), the restart with the
// profiler, and a restart to leave the server as asked in the classic order.
func Loads(plan []string, leave string) int {
	n := 0
	classic := false
	for _, s := range plan {
		switch s {
		case Serve:
			n++
		case Restart:
			n++
			classic = true
		}
	}
	if classic && leave != LeaveStopped && leave != LeaveProfiler {
		n++ // restarted without the profiler
	}
	return n
}

// StepsOf is plan's steps for --phases sel in an order.
func StepsOf(order string, sel []string) []string {
	all := StepsFor(order)
	if len(sel) == 0 {
		return append([]string(nil), all...)
	}
	want := map[string]bool{}
	for _, p := range sel {
		want[p] = true
	}
	var out []string
	for _, s := range all {
		if s == Doctor || s == LeaveServer || s == Notebook {
			out = append(out, s)
			continue
		}
		for _, p := range oneLoadPhase(order, s) {
			if want[p] {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// oneLoadPhase is the phases a step belongs to in an order: in the
// one-load order the serve step loads for the profile too.
func oneLoadPhase(order, step string) []string {
	if order == OrderOneLoad && step == Serve {
		return []string{phases.Load, phases.Macro, phases.Profile}
	}
	return stepPhase[step]
}

// profilerConfigured reports whether the serving server has the torch
// profiler configured: vLLM and the simulated server register
// /start_profile (POST only) just then, so a GET answers 405 Method Not
// Allowed, and 404 without it. Nothing is started by asking.
func (r *runner) profilerConfigured(ctx context.Context) bool {
	if r.cfg.Watch.HealthURL == "" {
		return false
	}
	u := strings.TrimSuffix(r.cfg.Watch.HealthURL, "/health") + "/start_profile"
	resp, err := r.get(ctx, u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusMethodNotAllowed
}

// serveProfiled is the one-load order's serve step: the server launched
// once with the torch profiler configured, so the sweep and the profile
// share the load. A server already serving with the profiler is kept; one
// serving without it is restarted with it when the profile is still to do.
func (r *runner) serveProfiled(ctx context.Context) (string, string) {
	if r.healthy(ctx) {
		if r.profilerConfigured(ctx) {
			r.mode = modeProfiler
			r.probeVersion(ctx)
			return phases.StepDone, "already serving with the profiler configured" + r.versionNote()
		}
		if !r.profileToDo {
			r.mode = modeServing
			r.probeVersion(ctx)
			return phases.StepDone, "already serving: GET answered 200" + r.versionNote()
		}
		flags, env, v := r.profilerArgs()
		state, reason := r.restartAndFollow(ctx, flags, env, modeProfiler, "restarted with the profiler "+profilerHow(env)+" (vLLM "+v+")")
		if state != phases.StepDone {
			r.endReason = "the server did not come up (" + state + "): " + reason
		}
		return state, reason
	}
	if _, alive := r.cfg.Server.Running(ctx); alive {
		return r.serve(ctx) // a load under way is followed as it is
	}
	flags, env, v := r.profilerArgs()
	r.touched = true
	if _, err := r.cfg.Server.Start(ctx, flags, env); err != nil {
		r.endReason = "the server could not be started: " + errText(err)
		return phases.StepFailed, errText(err)
	}
	state, reason := r.follow(ctx)
	if state != phases.StepDone {
		r.mode = modeBroken
		r.endReason = "the server did not come up (" + state + "): " + reason
		return state, reason
	}
	r.mode = modeProfiler
	r.probeVersion(ctx)
	return state, fmt.Sprintf("started with the profiler configured (%s, vLLM %s); %s", profilerHow(env), v, reason)
}

// profilerHow names how the profiler was turned on.
func profilerHow(env map[string]string) string {
	for k := range env {
		return k
	}
	return "--profiler-config"
}

// Remaining are the steps cfg's run will do, in order, as the journal
// (cfg.Prior) and --redo leave them: what its plan prints before it starts.
func Remaining(cfg Config) []string {
	r := &runner{cfg: cfg}
	done, redo := DoneSteps(cfg.Prior, cfg.Identity), expandRedo(cfg.Redo)
	if !cfg.Keep {
		for s := range ChangedSteps(done, cfg.Params) {
			redo[s] = true
		}
	}
	plan := r.plan()
	todo := r.todo(plan, done, redo)
	var out []string
	for _, s := range plan {
		if todo[s] {
			out = append(out, s)
		}
	}
	return out
}

// LastTook is how long each step took when last done in the journal (any
// identity: a load takes about as long for the same host), by step.
func LastTook(events []phases.Event) map[string]time.Duration {
	out := map[string]time.Duration{}
	started := map[string]time.Time{}
	for _, ev := range events {
		d, ok := ev.Data.(phases.RunStep)
		if !ok {
			continue
		}
		switch d.State {
		case phases.StepStarted:
			started[d.Name] = ev.Time
		case phases.StepDone:
			if t, ok := started[d.Name]; ok && !strings.HasPrefix(d.Reason, "already serving") {
				out[d.Name] = ev.Time.Sub(t)
			}
		}
	}
	return out
}

// DoctorVersion is the vLLM version the doctor's engine check found
// ("vLLM 0.12.0 (installed for python3)"), or "".
func DoctorVersion(c phases.DoctorCheck) string {
	if c.Name != "engine" || c.Status != phases.CheckOK || !strings.HasPrefix(c.Found, "vLLM ") {
		return ""
	}
	v, _, _ := strings.Cut(strings.TrimPrefix(c.Found, "vLLM "), " ")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return ""
	}
	return v
}

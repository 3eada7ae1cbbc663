package campaignrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
)

// serve makes sure the server serves: it already does (GET /health answers
// 200), or a load under way is followed, or the server is started and its
// load followed. A load that fails or stalls ends the run.
func (r *runner) serve(ctx context.Context) (string, string) {
	if r.healthy(ctx) {
		r.mode = modeServing
		r.probeVersion(ctx)
		return phases.StepDone, "already serving: GET " + remote.MaskURL(r.cfg.Watch.HealthURL) + " answered 200" + r.versionNote()
	}
	how := "following the load under way"
	if pid, alive := r.cfg.Server.Running(ctx); !alive {
		if _, err := r.cfg.Server.Start(ctx, nil, nil); err != nil {
			r.endReason = "the server could not be started: " + errText(err)
			return phases.StepFailed, errText(err)
		}
		r.touched = true
		how = "started"
	} else {
		how += fmt.Sprintf(" (pid %d)", pid)
	}
	state, reason := r.follow(ctx)
	if state != phases.StepDone {
		r.mode = modeBroken
		r.endReason = "the server did not come up (" + state + "): " + reason
		return state, reason
	}
	r.mode = modeServing
	r.probeVersion(ctx)
	return state, how + "; " + reason + r.versionNote()
}

// follow follows the load under way until the server is ready, its load
// failed or stalled.
func (r *runner) follow(ctx context.Context) (string, string) {
	cfg := r.cfg.Watch
	cfg.Host = r.cfg.Host
	em := r.em
	if r.cfg.QuietFollow {
		em = nil
	}
	var end load.Ending
	var err error
	if len(r.cfg.Nodes) > 1 {
		end, err = load.NewGroup(cfg, r.cfg.Nodes).Until(ctx, em)
	} else {
		end, err = load.NewWatcher(cfg).Until(ctx, em)
	}
	if err != nil {
		return phases.StepFailed, errText(err)
	}
	switch end.Kind {
	case load.EndReady:
		return phases.StepDone, "ready: " + end.Reason
	case load.EndStalled:
		return phases.StepStalled, end.Reason
	}
	return phases.StepFailed, end.Reason
}

// probeVersion asks the serving server for its version (GET /version, as
// vLLM answers it) when neither the campaign nor a log named it.
func (r *runner) probeVersion(ctx context.Context) {
	r.settle()
	r.mu.Lock()
	known := r.version != ""
	r.mu.Unlock()
	if known || r.cfg.Watch.HealthURL == "" {
		return
	}
	u := strings.TrimSuffix(r.cfg.Watch.HealthURL, "/health") + "/version"
	var v struct {
		Version string `json:"version"`
	}
	if r.getJSON(ctx, u, &v) && v.Version != "" {
		r.mu.Lock()
		r.version = v.Version
		r.mu.Unlock()
	}
}

// versionNote is "; vLLM X" when the server's version is known.
func (r *runner) versionNote() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.version == "" {
		return ""
	}
	return "; vLLM " + r.version
}

// healthy reports whether GET /health answers 200 through the host.
func (r *runner) healthy(ctx context.Context) bool {
	if r.cfg.Watch.HealthURL == "" {
		return false
	}
	return r.getJSON(ctx, r.cfg.Watch.HealthURL, nil)
}

// getJSON GETs u through the host and reports whether it answered 200; a
// body of at most 64 KiB is decoded into v when v is not nil.
func (r *runner) getJSON(ctx context.Context, u string, v any) bool {
	resp, err := r.get(ctx, u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if v != nil {
		return json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(v) == nil
	}
	return true
}

// get GETs u through the host, within 5 s, on a connection of its own.
func (r *runner) get(ctx context.Context, u string) (*http.Response, error) {
	h := r.cfg.Host
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return h.DialContext(ctx, network, addr)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// macro runs the campaign's sweep.
func (r *runner) macro(ctx context.Context) (string, string) {
	sw, err := r.sweepEngine()
	if err != nil {
		return phases.StepFailed, err.Error()
	}
	res, err := sw.Run(ctx, r.em) // the engine brackets its run
	if err != nil {
		return phases.StepFailed, errText(err)
	}
	ok := 0
	for _, l := range res.Levels {
		ok += l.Completed
	}
	if ok == 0 {
		return phases.StepFailed, fmt.Sprintf("no request completed in %d level(s)", len(res.Levels))
	}
	reason := fmt.Sprintf("%d level(s), %d requests", len(res.Levels), ok)
	if res.Plateau != nil {
		reason += fmt.Sprintf("; plateau at C=%d", res.Plateau.Concurrency)
	} else {
		reason += "; no plateau found"
	}
	return phases.StepDone, reason
}

// sweepEngine is the campaign's sweep (SweepEngine).
func (r *runner) sweepEngine() (macro.Engine, error) {
	return SweepEngine(r.cfg.Sweep, r.cfg.Loadgen, onhost.Options{Host: r.cfg.Host, MetricsURL: r.cfg.MetricsURL}, r.cfg.Agents)
}

// SweepEngine is the one place that picks a sweep's engine, for every
// front-end: over the load agents when there are some (fleet.Engine),
// else where the load generator runs (mode, onhost.NewEngine).
func SweepEngine(cfg macro.Config, mode string, opt onhost.Options, agents []fleet.Member) (macro.Engine, error) {
	if len(agents) > 0 {
		e, err := fleet.NewEngine(cfg, agents)
		if err != nil {
			return nil, err // not a nil *fleet.Engine in the interface
		}
		return e, nil
	}
	return onhost.NewEngine(cfg, mode, opt)
}

// freeGPUs stops the server and waits until the GPUs' memory is released.
func (r *runner) freeGPUs(ctx context.Context) (string, string) {
	r.touched = true
	err := r.cfg.Server.Stop(ctx)
	if err == nil {
		r.mode = modeStopped
		return phases.StepDone, "server stopped; " + r.cfg.Server.StopNote()
	}
	if ctx.Err() == nil && pyrun.Busy(ctx, r.cfg.Host) == nil {
		r.mode = modeStopped
		return phases.StepDone, "no server to stop (" + err.Error() + "); the GPUs are free"
	}
	return phases.StepFailed, errText(err)
}

// gpuPhase builds the model's plan on the host and runs a GPU phase with it.
func (r *runner) gpuPhase(ctx context.Context, opts model.Options, fn func(context.Context, model.Plan) error) (string, string) {
	plan, err := gpubench.Plan(ctx, r.cfg.Host, r.cfg.ModelSpec, opts)
	if err != nil {
		return phases.StepFailed, fmt.Sprintf("model %s: %s", r.cfg.ModelSpec, errText(err))
	}
	if err := fn(ctx, plan); err != nil {
		return phases.StepFailed, errText(err)
	}
	return phases.StepDone, fmt.Sprintf("%s TP%d at batch %v", r.cfg.ModelSpec, opts.TP, plan.Batch)
}

func (r *runner) micro(ctx context.Context) (string, string) {
	cfg := r.cfg.Micro
	cfg.Host = r.cfg.Host
	opts := r.cfg.MicroPlan
	opts.Batch = withStepTokens(opts.Batch, append(r.stepMs(), r.reachable()...))
	return r.gpuPhase(ctx, opts, func(ctx context.Context, p model.Plan) error {
		cfg.Plan = p
		return micro.Run(ctx, cfg, r.em)
	})
}

func (r *runner) nccl(ctx context.Context) (string, string) {
	cfg := r.cfg.NCCL
	cfg.Host = r.cfg.Host
	none, tp := false, 0
	state, reason := r.gpuPhase(ctx, r.cfg.NCCLPlan, func(ctx context.Context, p model.Plan) error {
		cfg.Plan = p
		_, none = nccl.NoCollectives(cfg)
		tp = max(p.TP, 1)
		return nccl.Run(ctx, cfg, r.em)
	})
	if state == phases.StepDone && none {
		// One GPU is a deployment too: nothing to time is done, and said.
		reason = fmt.Sprintf("no collectives at TP%d: nothing for NCCL to time, communication 0 ms per step (%s)", tp, reason)
	}
	return state, reason
}

// profilerArgs are the flags or environment that turn the torch profiler on
// for the server's version, and the version they were chosen for.
func (r *runner) profilerArgs() ([]string, map[string]string, string) {
	r.settle()
	r.mu.Lock()
	v, engine := r.version, r.engine
	r.mu.Unlock()
	if engine == "" || engine == "vllm" && r.cfg.Watch.Engine == "sglang" {
		engine = r.cfg.Watch.Engine
	}
	flags, env := load.ProfilerArgsFor(engine, v, r.cfg.ProfilerDir)
	if engine == "sglang" {
		v = "SGLang"
	}
	if v == "" {
		v = "unknown (taken as current)"
	}
	return flags, env, v
}

// restart restarts the server with the torch profiler and follows the load.
// A stall or failure skips the profile with it as the reason; the run goes on.
func (r *runner) restart(ctx context.Context) (string, string) {
	flags, env, v := r.profilerArgs()
	r.touched = true
	if _, err := r.cfg.Server.Restart(ctx, flags, env); err != nil {
		r.mode = modeUnknown
		r.skipNext[Profile] = "the restart with the profiler failed: " + errText(err)
		return phases.StepFailed, errText(err)
	}
	state, reason := r.follow(ctx)
	if state != phases.StepDone {
		r.mode = modeBroken
		r.skipNext[Profile] = "the restart with the profiler " + state + ": " + reason
		return state, reason
	}
	r.mode = modeProfiler
	how := "--profiler-config"
	if len(env) > 0 {
		how = "VLLM_TORCH_PROFILER_DIR"
	}
	return state, fmt.Sprintf("with %s (vLLM %s); %s", how, v, reason)
}

// profile captures the torch profile at C=1, at a swept level between and
// at the plateau of the latest sweep for this run's model, TP and launch
// (this run's, or the journal's), when it is a level a capture can hold.
func (r *runner) profile(ctx context.Context) (string, string) {
	cfg := r.cfg.Profile
	cfg.Host = r.cfg.Host
	cfg.Load = onhost.LoadFor(r.cfg.Loadgen, onhost.Options{Host: r.cfg.Host})
	plateau, swept, note := r.profilePlateau()
	cfg.Concurrency = ProfileLevels(swept, plateau)
	levels, err := profile.CaptureLevels(ctx, cfg, r.em) // the engine brackets its run
	if err != nil {
		return phases.StepFailed, errText(err)
	}
	var parts []string
	for _, s := range levels {
		if s.Window == phases.WindowSteady {
			continue
		}
		parts = append(parts, fmt.Sprintf("C=%d %.1f%%", s.Level, 100*s.CommunicationShare))
	}
	return phases.StepDone, "communication share of device time per level: " + strings.Join(parts, ", ") + note
}

// leave leaves the server as the campaign says.
func (r *runner) leave(ctx context.Context) (string, string) {
	switch r.cfg.Leave {
	case LeaveStopped:
		if r.mode == modeStopped {
			return phases.StepDone, "left stopped"
		}
		if err := r.cfg.Server.Stop(ctx); err != nil {
			return phases.StepFailed, "stopping the server: " + errText(err)
		}
		r.mode = modeStopped
		return phases.StepDone, "stopped; " + r.cfg.Server.StopNote()
	case LeaveProfiler:
		if r.mode == modeProfiler {
			return phases.StepDone, "left serving with the profiler"
		}
		flags, env, _ := r.profilerArgs()
		return r.restartAndFollow(ctx, flags, env, modeProfiler, "restarted with the profiler")
	}
	if r.mode == modeServing {
		return phases.StepDone, "left serving"
	}
	if r.mode == modeProfiler && r.cfg.Order == OrderOneLoad {
		return phases.StepDone, "left serving, the profiler configured and idle (no load to take it off)"
	}
	return r.restartAndFollow(ctx, nil, nil, modeServing, "restarted without the profiler")
}

func (r *runner) restartAndFollow(ctx context.Context, flags []string, env map[string]string, mode, what string) (string, string) {
	if _, err := r.cfg.Server.Restart(ctx, flags, env); err != nil {
		r.mode = modeUnknown
		return phases.StepFailed, errText(err)
	}
	state, reason := r.follow(ctx)
	if state != phases.StepDone {
		r.mode = modeBroken
		return state, reason
	}
	r.mode = mode
	return state, what + "; " + reason
}

// ProfileLevels are the levels a campaign profiles: C=1, the swept level
// geometrically nearest the middle of 1 and the plateau (strictly between),
// and the plateau.
func ProfileLevels(swept []int, plateau int) []int {
	out := []int{1}
	if plateau <= 1 {
		return out
	}
	mid, best := 0, math.Inf(1)
	for _, c := range swept {
		if c <= 1 || c >= plateau {
			continue
		}
		if d := math.Abs(math.Log(float64(c)) - math.Log(float64(plateau))/2); d < best {
			mid, best = c, d
		}
	}
	if mid > 0 {
		out = append(out, mid)
	}
	return append(out, plateau)
}

// profilePlateau is the plateau and the levels of the latest sweep for
// the run's identity, the plateau 0 when a capture cannot take it (a
// journal may say anything: it once named C=20,000,000), with a note that
// says why only C=1 is profiled, when it is.
func (r *runner) profilePlateau() (int, []int, string) {
	r.mu.Lock()
	plateau, swept := r.sweep.plateau, r.sweep.levels
	r.mu.Unlock()
	switch err := profile.CheckLevels([]int{plateau}); {
	case plateau == 0:
		return 0, nil, " (no plateau from the sweep: C=1 only)"
	case plateau == 1:
		return 1, nil, " (the sweep's plateau is C=1)"
	case err != nil:
		return 0, nil, fmt.Sprintf(" (the sweep's plateau C=%d is not a level a capture takes: %v; C=1 only)", plateau, err)
	}
	return plateau, swept, ""
}

// stepMs are the tokens the engine's steps held at the levels the budget
// splits (rounded up), for micro to time the GEMMs at what a step holds;
// a count a GEMM cannot be timed at (over gpubench.MaxBatch) is left out.
func (r *runner) stepMs() []int {
	plateau, swept, _ := r.profilePlateau()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, c := range ProfileLevels(swept, plateau) {
		if t, ok := r.sweep.stepTokens[c]; ok && t > float64(c)+0.5 && t <= gpubench.MaxBatch {
			out = append(out, int(math.Ceil(t)))
		}
	}
	return out
}

// reachable are, in the one-load order (micro before the sweep), the
// batches the sweep can reach: at each of its levels C, a decode step's C
// tokens and a mixed step's C×(input+output)/output (each request's prompt
// spread over its decode steps), so the plateau's step is between two
// timed batches (the budget interpolates between them).
func (r *runner) reachable() []int {
	if r.cfg.Order != OrderOneLoad {
		return nil
	}
	in, out := r.cfg.Sweep.InputLen, max(r.cfg.Sweep.OutputLen, 1)
	var ms []int
	for _, c := range r.cfg.Sweep.Concurrency {
		mixed := int(math.Ceil(float64(c) * float64(in+out) / float64(out)))
		for _, m := range []int{c, mixed} {
			if m > 0 && m <= gpubench.MaxBatch {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// withStepTokens adds the step sizes to the planned batch sizes, sorted,
// without repeats.
func withStepTokens(batch, extra []int) []int {
	if len(extra) == 0 {
		return batch
	}
	seen := map[int]bool{}
	var out []int
	for _, m := range append(append([]int{}, batch...), extra...) {
		if m > 0 && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Ints(out)
	return out
}

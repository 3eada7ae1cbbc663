package profile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
)

// Config is one capture. The capture fills in no default: every value it
// needs is given (Validate says which is missing); the campaign (package
// campaign) is where the defaults live.
type Config struct {
	Host        remote.Host
	URL         string // the server as seen from the host, e.g. http://127.0.0.1:8000
	Model       string // "" asks /v1/models
	API         string // "completions" or "chat"
	APIKey      string // never journalled
	ProfilerDir string // the server's torch profiler directory on the host
	// Concurrency are the levels, one capture window each (the pane and
	// `profdeck run` take C=1 and the sweep's plateau).
	Concurrency []int
	// Steps is how many engine steps a window records.
	Steps     int
	InputLen  int // prompt tokens
	OutputLen int // output tokens per request
	// StopTimeout bounds stop_profile, which blocks while traces flush
	// (minutes on a large model).
	StopTimeout time.Duration
	// RemoteOver is the trace size above which the trace is summarised on
	// the host by a Python script rather than read over the connection.
	// Python is the interpreter to use there.
	RemoteOver int64
	Python     string
	// Top is how many kernels the summary lists.
	Top int
	// Steady adds, at each level, a window of the sweep's own traffic
	// (InputLen and OutputLen requests, arrivals and completions going on)
	// beside the decode-only one.
	Steady bool
	// Load runs each window's load; nil sends it from here through Host
	// (RunLoad). The load generator on the GPU host is another
	// (phases/macro/onhost.ProfileLoad).
	Load LoadFunc
}

// Validate checks that c is complete and its values in range, before any
// request; the error names the field. A caller that maps a flag or a
// campaign key to a field checks the value first, naming what it maps.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Host == nil:
		return bad("Host", "no host")
	case strings.TrimSpace(c.URL) == "":
		return bad("URL", "no server URL")
	case c.API != "completions" && c.API != "chat":
		return bad("API", "%q: want completions or chat", c.API)
	case strings.TrimSpace(c.ProfilerDir) == "":
		return bad("ProfilerDir", "not set: the server's torch profiler directory on the host must be given")
	case c.Steps < 1:
		return bad("Steps", "%d: want at least 1 engine step per window", c.Steps)
	case c.InputLen < 1:
		return bad("InputLen", "%d: want at least 1 token", c.InputLen)
	case c.OutputLen < 1:
		return bad("OutputLen", "%d: want at least 1 token", c.OutputLen)
	case c.StopTimeout <= 0:
		return bad("StopTimeout", "%s: want more than 0", c.StopTimeout)
	case c.RemoteOver <= 0:
		return bad("RemoteOver", "%d: want a size in bytes above 0", c.RemoteOver)
	case strings.TrimSpace(c.Python) == "":
		return bad("Python", "not set: the interpreter on the host")
	case c.Top < 1:
		return bad("Top", "%d: want at least 1 kernel", c.Top)
	}
	if len(c.Concurrency) == 0 {
		return bad("Concurrency", "not set: want at least one level (e.g. 1)")
	}
	if err := CheckLevels(c.Concurrency); err != nil {
		return bad("Concurrency", "%v: %v", c.Concurrency, err)
	}
	return nil
}

// MaxLevel bounds a capture's concurrency level: a window holds that many
// streams open at once, and a trace of thousands of concurrent requests is
// already more than a profile can be read from.
const MaxLevel = 4096

// ParseLevels reads a list of capture levels like "1,64" (each 1 to
// MaxLevel, none twice).
func ParseLevels(s string) ([]int, error) { return units.ParseInts(s, 1, MaxLevel) }

// CheckLevels checks capture levels as ParseLevels reads them.
func CheckLevels(levels []int) error { return units.CheckInts(levels, 1, MaxLevel) }

// cancelStopWait is how long a cancelled capture waits for stop_profile.
const cancelStopWait = 10 * time.Second

// Timeouts of the small requests around the capture.
const (
	probeTimeout   = 30 * time.Second
	startTimeout   = 5 * time.Minute // start_profile returns once every worker started
	requestTimeout = 10 * time.Minute
)

// ErrProfilerDisabled is returned when the server has no profiler
// endpoints: it was started without the torch profiler.
var ErrProfilerDisabled = errors.New("the server was not started with the torch profiler: POST /start_profile answers 404. " +
	"Restart it with the profiler (--profiler-config '{\"profiler\":\"torch\",\"torch_profiler_dir\":\"DIR\"}' on vLLM 0.13+, " +
	"VLLM_TORCH_PROFILER_DIR=DIR before); the restart reloads the model weights")

// ErrServerDown is matched (errors.Is) by a capture's error when nothing
// answers at the server's URL: it is not running, or still loading.
var ErrServerDown = errors.New("the server is not running")

// downError is a capture against a server that does not answer: it names
// the URL and the transport's reason in words, and says what to do.
type downError struct {
	url string
	err error
}

func (e downError) Error() string {
	return fmt.Sprintf("no server answers at %s (%s): start it with the torch profiler first "+
		"(the cockpit's Server/Load pane: 1, then s to start or r to restart with the profiler; headless: "+
		"profdeck load follows a load until the server is ready)", e.url, dialReason(e.err))
}
func (e downError) Is(t error) bool { return t == ErrServerDown }
func (e downError) Unwrap() error   { return e.err }

// dialReason says why a request found no server, in words rather than Go's
// "dial tcp …: connect: connection refused".
func dialReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "connection refused: nothing listens on that port"
	case strings.Contains(msg, "no such host"):
		return "the host name does not resolve"
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "timeout"):
		return "no answer in time"
	case strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF"):
		return "the connection was closed: the server may be starting or stopping"
	}
	return "unreachable"
}

// Capture takes one profile per concurrency level (see CaptureLevels) and
// returns the last level's summary, for callers that want one figure.
func Capture(ctx context.Context, cfg Config, em *phases.Emitter) (*phases.ProfileSummary, error) {
	levels, err := CaptureLevels(ctx, cfg, em)
	if err != nil {
		return nil, err
	}
	return &levels[len(levels)-1], nil
}

// CaptureLevels opens one capture window per level of cfg.Concurrency: a
// steady load of C streams, start_profile once the streams run, stop_profile
// once cfg.Steps engine steps have passed (from /metrics), so each trace
// holds about Steps decode steps at that concurrency and stays small. Each
// window's output is read from the profiler directory and summarised, with
// the steps counted in the trace, and emitted as a KindProfileSummary with
// Level set. Progress goes out as KindProfileStep events; a failure as
// KindProfileFailed, with the levels done so far returned. Cancelling ctx
// after start_profile still sends stop_profile.
func CaptureLevels(ctx context.Context, cfg Config, em *phases.Emitter) ([]phases.ProfileSummary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &phases.InputError{Err: fmt.Errorf("profile: %w", err)}
	}
	params := map[string]any{"url": remote.MaskURL(cfg.URL), "steps": cfg.Steps, "concurrency": cfg.Concurrency,
		"profiler_dir": cfg.ProfilerDir, "input_len": cfg.InputLen, "output_len": cfg.OutputLen, "steady": cfg.Steady}
	var levels []phases.ProfileSummary
	err := phases.Run(ctx, em, phases.Profile, params, func(ctx context.Context) (err error) {
		levels, err = captureLevels(ctx, cfg, em)
		return err
	})
	return levels, err
}

func captureLevels(ctx context.Context, cfg Config, em *phases.Emitter) ([]phases.ProfileSummary, error) {
	c := newClient(cfg.Host, cfg.URL, cfg.APIKey)
	defer c.close()
	r := &run{cfg: cfg, c: c, em: em}
	levels, err := r.capture(ctx)
	if err != nil {
		err = remote.MaskErr(err) // the server URL may carry user:password@
		em.Emit(context.WithoutCancel(ctx), phases.KindProfileFailed, phases.ProfileFailed{
			Step: r.step, Error: err.Error(), ProfilerDisabled: errors.Is(err, ErrProfilerDisabled),
			ServerDown: errors.Is(err, ErrServerDown)})
		return levels, err
	}
	return levels, nil
}

type run struct {
	cfg       Config
	c         *client
	em        *phases.Emitter
	step      string
	stepStart time.Time
}

// begin starts step and says so.
func (r *run) begin(ctx context.Context, step, detail string) {
	r.step, r.stepStart = step, time.Now()
	r.emitStep(ctx, detail, 0, false)
}

// progress says how the current step goes.
func (r *run) progress(ctx context.Context, detail string) {
	r.emitStep(ctx, detail, time.Since(r.stepStart).Seconds(), false)
}

// done says the current step finished.
func (r *run) done(ctx context.Context, detail string) {
	r.emitStep(ctx, detail, time.Since(r.stepStart).Seconds(), true)
}

func (r *run) emitStep(ctx context.Context, detail string, elapsed float64, done bool) {
	r.em.Emit(ctx, phases.KindProfileStep, phases.ProfileStep{Step: r.step, ElapsedS: elapsed, Detail: remote.MaskURL(detail), Done: done})
}

func (r *run) capture(ctx context.Context) ([]phases.ProfileSummary, error) {
	dir, err := remote.ResolveUID(ctx, r.cfg.Host, r.cfg.ProfilerDir) // the launch's folder, {uid} as there
	if err != nil {
		return nil, err
	}
	r.cfg.ProfilerDir = dir
	cfg := r.cfg
	r.begin(ctx, "check", "profiler endpoints at "+cfg.URL)
	// A GET on a POST-only route answers 405 when it exists and 404 when
	// vLLM did not register it (started without the profiler).
	pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
	defer pcancel()
	code, _, err := r.c.status(pctx, http.MethodGet, "/start_profile")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, downError{url: cfg.URL, err: err}
	}
	if code == http.StatusNotFound {
		return nil, ErrProfilerDisabled
	}
	model := cfg.Model
	if model == "" {
		if model, err = r.c.model(pctx); err != nil {
			return nil, fmt.Errorf("server %s: %w", cfg.URL, err)
		}
	}
	r.done(ctx, fmt.Sprintf("profiler on; model %s; %d levels of %d steps", model, len(cfg.Concurrency), cfg.Steps))
	var out []phases.ProfileSummary
	kinds := []string{phases.WindowDecode}
	if cfg.Steady {
		kinds = append(kinds, phases.WindowSteady)
	}
	for _, conc := range cfg.Concurrency {
		for _, kind := range kinds {
			s, err := r.window(ctx, model, max(conc, 1), kind)
			if err != nil {
				return out, fmt.Errorf("C=%d (%s window): %w", conc, kind, err)
			}
			r.em.Emit(ctx, phases.KindProfileSummary, s)
			out = append(out, *s)
		}
	}
	return out, nil
}

// window is one level's capture: load, start, Steps steps, stop, read. A
// decode window's streams outlast it (decode steps only); a steady one runs
// the sweep's own requests.
func (r *run) window(ctx context.Context, model string, conc int, kind string) (*phases.ProfileSummary, error) {
	cfg := r.cfg
	before, err := listDir(ctx, cfg.Host, cfg.ProfilerDir)
	if err != nil {
		return nil, err
	}
	r.begin(ctx, "load", fmt.Sprintf("C=%d: starting %d streams (%s window)", conc, conc, kind))
	lctx, stopLoad := context.WithCancel(ctx)
	steps := cfg.Steps
	var ld *bgLoad
	if kind == phases.WindowSteady {
		ld, steps = r.startSteady(lctx, model, conc), r.steadySteps()
	} else {
		ld = r.startLoad(lctx, model, conc)
	}
	defer func() { stopLoad(); ld.wait() }()
	warm := r.warm
	if kind == phases.WindowSteady {
		warm = r.warmSteady
	}
	if err := warm(ctx, ld, conc); err != nil {
		return nil, err
	}
	r.done(ctx, fmt.Sprintf("C=%d: %d streams running", conc, conc))
	var unprofiled float64
	if kind == phases.WindowDecode {
		unprofiled = r.stepPeriod(ctx, ld, conc)
	}

	if err := r.startProfiler(ctx); err != nil {
		return nil, err
	}
	rec, recErr := r.record(ctx, ld, conc, steps)
	stopS, stopErr := r.stopProfiler(ctx, &rec)
	stopLoad()
	ld.wait()
	var notes []string
	if recErr != nil {
		if stopErr != nil {
			return nil, fmt.Errorf("%w (and stop_profile: %v)", recErr, stopErr)
		}
		if ctx.Err() != nil || rec.tokens == 0 {
			return nil, recErr
		}
		// Keep what was recorded: the profile covers the steps that ran.
		notes = append(notes, fmt.Sprintf("the load stopped early (%v): the profile covers %d output tokens", recErr, rec.tokens))
	}
	if stopErr != nil {
		return nil, stopErr
	}

	files, s, err := r.collect(ctx, conc, before)
	if err != nil {
		return nil, err
	}
	s.Notes = append(notes, s.Notes...)
	s.Level, s.Concurrency, s.StopS, s.Window = conc, []int{conc}, stopS, kind
	s.WindowS, s.StepMix = rec.mix()
	s.UnprofiledStepMs = unprofiled
	s.Requests, s.OutputTokens = rec.done, rec.tokens
	s.ProfilerDir = cfg.ProfilerDir
	s.Simulated = remote.IsSimulated(cfg.Host)
	for _, f := range files {
		s.Files = append(s.Files, f.path)
	}
	r.perStep(s, rec, conc)
	return s, nil
}

// startProfiler asks the server to start recording (POST /start_profile).
func (r *run) startProfiler(ctx context.Context) error {
	r.begin(ctx, "start_profile", "POST "+r.cfg.URL+"/start_profile")
	stctx, stcancel := context.WithTimeout(ctx, startTimeout)
	defer stcancel()
	code, body, err := r.c.status(stctx, http.MethodPost, "/start_profile")
	if err != nil {
		return fmt.Errorf("POST /start_profile: %w", err)
	}
	if code == http.StatusNotFound {
		return ErrProfilerDisabled
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST /start_profile: HTTP %d %s", code, body)
	}
	r.done(ctx, "profiler started")
	return nil
}

// stopProfiler stops the recording whatever happened (a server left
// recording fills its memory); after a cancel it sends stop_profile but
// waits only briefly for the flush. It returns the stop's seconds, and
// sets rec's steps to those the trace holds.
func (r *run) stopProfiler(ctx context.Context, rec *recording) (float64, error) {
	stopCtx, stopTimeout := ctx, r.cfg.StopTimeout
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cancelStopWait)
		defer cancel()
		stopTimeout = cancelStopWait
	}
	stopS, stopErr := r.stop(stopCtx, stopTimeout)
	// The engine takes stop_profile between two steps: the steps counted
	// once it answered are the steps the trace holds (the polls above
	// stop up to one poll early).
	if stopErr == nil && rec.haveSteps {
		if m := r.c.metrics(ctx); m.haveSteps && m.steps >= rec.m1.steps {
			rec.steps = int(m.steps - rec.m0.steps)
		}
	}
	return stopS, stopErr
}

// collect finds the trace files the window wrote and summarises them.
func (r *run) collect(ctx context.Context, conc int, before map[string]fileInfo) ([]fileInfo, *phases.ProfileSummary, error) {
	r.begin(ctx, "collect", "new files in "+r.cfg.ProfilerDir)
	files, err := r.newFiles(ctx, before)
	if err != nil {
		return nil, nil, err
	}
	r.done(ctx, fmt.Sprintf("%d new files", len(files)))
	r.begin(ctx, "summarise", fmt.Sprintf("C=%d: %d new files", conc, len(files)))
	s, err := summarise(ctx, r.cfg, files, func(d string) { r.progress(ctx, d) })
	if err != nil {
		return nil, nil, err
	}
	r.done(ctx, s.Source)
	return files, s, nil
}

// recording is what the load did between start_profile and stop_profile.
type recording struct {
	steps      int   // engine steps from /metrics (0: unknown)
	haveSteps  bool  // /metrics counted them
	started    int   // requests started inside the window (their prefills are in it)
	done       int   // requests completed inside the window
	tokens     int64 // their output tokens, from the server's usage
	bytime     bool  // the window ended on its time bound
	maxRunning int   // the most requests /metrics said were running
	windowTime time.Duration
	// /metrics at the window's start and at its last count, and when.
	m0, m1 serverMetrics
	t0, t1 time.Time
}

// mix is the window's wall time between its two /metrics reads and what
// the engine ran in it; nil without the step counters.
func (rec recording) mix() (float64, *phases.StepMix) {
	if rec.t1.IsZero() || !rec.t1.After(rec.t0) {
		return 0, nil
	}
	span := rec.t1.Sub(rec.t0).Seconds()
	a, b := rec.m0, rec.m1
	if !a.haveSteps || !b.haveSteps || !a.haveMix || !b.haveMix || b.steps <= a.steps {
		return round3(span), nil
	}
	m := &phases.StepMix{WindowS: round3(span), Steps: b.steps - a.steps, StepTokens: b.stepTokens - a.stepTokens,
		PromptTokens: b.prompt - a.prompt, GenerationTokens: b.gen - a.gen}
	if m.StepTokens < 0 || m.PromptTokens < 0 || m.GenerationTokens < 0 {
		return round3(span), nil
	}
	m.StepsPerS = m.Steps / span
	m.TokensPerStep = m.StepTokens / m.Steps
	m.DecodeTokens = max(0, m.StepTokens-m.PromptTokens)
	return round3(span), m
}

// perStep fills the decode steps and the per-step split: steps counted in
// the trace first, then /metrics, then an estimate from the tokens.
func (r *run) perStep(s *phases.ProfileSummary, rec recording, conc int) {
	switch {
	case s.TraceSteps > 0:
		s.DecodeSteps, s.DecodeStepsSource = s.TraceSteps, s.TraceStepsFrom
		if rec.haveSteps && rec.steps > 0 {
			s.DecodeStepsSource += fmt.Sprintf("; /metrics counted %d engine steps over the window", rec.steps)
		}
	case rec.haveSteps && rec.steps > 0:
		s.DecodeSteps = rec.steps
		s.DecodeStepsSource = "engine steps from the server's /metrics (vllm:iteration_tokens_total count) over the window: the trace has no step annotations"
	case rec.tokens > 0:
		s.DecodeSteps = int((rec.tokens + int64(conc) - 1) / int64(conc))
		s.DecodeStepsSource = "estimated: output tokens completed in the window ÷ concurrency (no step annotations in the trace, no /metrics)"
	}
	if rec.started > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d requests started inside the window: their prefill steps are in the profile", rec.started))
	}
	if rec.maxRunning > conc {
		s.Notes = append(s.Notes, fmt.Sprintf("up to %d requests were running on the server during the C=%d window: other traffic is in this profile", rec.maxRunning, conc))
	}
	if rec.bytime {
		s.Notes = append(s.Notes, fmt.Sprintf("the window ended on its time bound (%s) before %d steps were counted", rec.windowTime.Round(time.Second), r.cfg.Steps))
	}
	if s.DecodeSteps <= 0 {
		return
	}
	n := float64(s.DecodeSteps)
	s.CommPerStepUs = round3(s.Categories[CatCommunication] / n)
	s.GPUPerStepUs = round3(s.TotalCUDAUs / n)
	s.PerStepUs = map[string]float64{}
	for c, v := range s.Categories {
		s.PerStepUs[c] = round3(v / n)
	}
}

// stop sends stop_profile and waits for it (it blocks while the traces
// flush), reporting the elapsed time every second.
func (r *run) stop(ctx context.Context, timeout time.Duration) (float64, error) {
	r.begin(ctx, "stop_profile", "flushing traces (can take minutes)")
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		code int
		body string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		code, body, err := r.c.status(sctx, http.MethodPost, "/stop_profile")
		ch <- result{code, body, err}
	}()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case res := <-ch:
			el := time.Since(r.stepStart).Seconds()
			if res.err != nil {
				if errors.Is(res.err, context.DeadlineExceeded) {
					return el, fmt.Errorf("POST /stop_profile: no answer in %s (the server may still be writing traces; a longer stop timeout waits for them)", timeout)
				}
				return el, fmt.Errorf("POST /stop_profile: %w", res.err)
			}
			if res.code != http.StatusOK {
				return el, fmt.Errorf("POST /stop_profile: HTTP %d %s", res.code, res.body)
			}
			r.done(ctx, fmt.Sprintf("traces flushed in %.1fs", el))
			return el, nil
		case <-t.C:
			r.progress(ctx, "flushing traces (can take minutes)")
		}
	}
}

// newFiles waits briefly for the profiler's files to appear and stop
// growing, and returns those new or changed since before.
func (r *run) newFiles(ctx context.Context, before map[string]fileInfo) ([]fileInfo, error) {
	var last []fileInfo
	for i := 0; i < 15; i++ {
		now, err := listDir(ctx, r.cfg.Host, r.cfg.ProfilerDir)
		if err != nil {
			return nil, err
		}
		var fresh []fileInfo
		for _, f := range now {
			if b, ok := before[f.path]; !ok || b.mtime != f.mtime || b.size != f.size {
				fresh = append(fresh, f)
			}
		}
		sort.Slice(fresh, func(i, j int) bool { return fresh[i].path < fresh[j].path })
		if len(fresh) > 0 && sameFiles(fresh, last) {
			return fresh, nil
		}
		last = fresh
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if len(last) == 0 {
		return nil, fmt.Errorf("no new files in %s after stop_profile: is that the server's torch_profiler_dir (VLLM_TORCH_PROFILER_DIR)? It must be a path on the host", r.cfg.ProfilerDir)
	}
	return last, nil
}

func sameFiles(a, b []fileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

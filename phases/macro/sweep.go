// Package macro is the macro phase: a load generator that sweeps concurrency
// against an OpenAI-compatible server's streaming API and measures TTFT,
// TPOT, ITL, E2EL and throughput per level the way vLLM defines them, with
// token counts taken from the server's usage and their source recorded.
package macro

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Result is the whole sweep; it is the document `sweep --json` writes.
type Result struct {
	URL       string  `json:"url"`
	Model     string  `json:"model"`
	API       string  `json:"api"`
	Started   string  `json:"started"` // RFC3339
	InputLen  int     `json:"input_len"`
	OutputLen int     `json:"output_len"`
	Requests  int     `json:"requests,omitempty"`
	DurationS float64 `json:"duration_s,omitempty"`
	Warmup    int     `json:"warmup"`
	Rate      float64 `json:"request_rate,omitempty"`
	// MaxConcurrency is an open loop's cap on requests in flight, as vLLM's
	// max_concurrency (0: none).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Metadata is what the operator attached to the run (vLLM bench
	// serve's --metadata KEY=VALUE).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Profdeck is the version of profdeck that ran the sweep (set by the
	// front-end).
	Profdeck   string               `json:"profdeck_version,omitempty"`
	Levels     []phases.LevelResult `json:"levels"`
	Plateau    *phases.Plateau      `json:"plateau"`
	Stopped    string               `json:"stopped,omitempty"` // why the sweep ended early
	Notes      []string             `json:"notes,omitempty"`
	PromptCal  string               `json:"prompt_calibration"` // "tokenize" or "estimate"
	Continuous bool                 `json:"continuous_usage_stats"`
	// Preflight is what the request sent before the first level found:
	// "ok", "ok without continuous_usage_stats", or "skipped".
	Preflight string `json:"preflight"`
	// Warnings are the sweep's estimates and doubts, said aloud: its own,
	// then each kind of level warning with the levels that had it.
	Warnings []string `json:"warnings"`
	// Path is how the requests reached the server: its round trip before
	// the first level, each level's token events per read, and what it
	// adds to or hides in the figures.
	Path *phases.MacroPath `json:"path"`
	// SLO is the sweep's SLO and the largest concurrency meeting it.
	SLO *SLOResult `json:"slo,omitempty"`
	// Search is the SLO search's answer (--search), with its interval and
	// the runs it took.
	Search *phases.Search `json:"search,omitempty"`
	// LatencyFrom is where TTFT and E2EL start: "sent" (the actual send)
	// or "intended" (the intended send: the coordinated-omission
	// correction). Arrivals and Burstiness are the open loop's schedule.
	LatencyFrom string  `json:"latency_from"`
	Arrivals    string  `json:"arrivals,omitempty"`
	Burstiness  float64 `json:"burstiness,omitempty"`
	// GPU is what the GPU sampler read and what the host lacked.
	GPU *phases.GPUTelSource `json:"gpu,omitempty"`
	// Deployment is what served the URL (TP, nodes), when the caller knew.
	Deployment *phases.Deployment `json:"deployment,omitempty"`
	// Workload is what was sent: the dataset, its seed and its shape.
	Workload    Workload    `json:"workload"`
	Definitions Definitions `json:"definitions"`
}

// Engine is a sweep that runs here (*Sweep) or on the GPU host
// (phases/macro/onhost): front-ends run and steer either through it.
type Engine interface {
	Run(ctx context.Context, em *phases.Emitter) (*Result, error)
	Config() Config
	Pause()
	Resume()
	Paused() bool
	SetConcurrency(n int)
	Concurrency() int
	Stop()
}

// Sweep runs the levels of one Config. Its steering methods are safe to call
// from another goroutine while Run runs.
type Sweep struct {
	cfg Config

	mu       sync.Mutex
	paused   bool
	target   int
	stopping bool
	wake     chan struct{}
}

// NewSweep checks cfg (Validate) and prepares a sweep.
func NewSweep(cfg Config) (*Sweep, error) {
	c, err := cfg.prepared()
	if err != nil {
		return nil, err
	}
	return &Sweep{cfg: c, wake: make(chan struct{}, 1)}, nil
}

// Config returns the sweep's configuration as it runs (its URL's /v1
// dropped, its levels in order, its seed drawn).
func (s *Sweep) Config() Config { return s.cfg }

func (s *Sweep) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pause stops sending new requests; those in flight finish.
func (s *Sweep) Pause() { s.mu.Lock(); s.paused = true; s.mu.Unlock(); s.poke() }

// Resume sends again after Pause.
func (s *Sweep) Resume() { s.mu.Lock(); s.paused = false; s.mu.Unlock(); s.poke() }

// Paused reports whether the sweep is paused.
func (s *Sweep) Paused() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.paused }

// SetConcurrency changes how many requests the current level keeps in
// flight, live. Raising it sends more at once; lowering it lets the extra
// requests finish and sends no new one until fewer are in flight (nothing
// is dropped). The level's result notes the change. Later levels keep their
// configured concurrency.
func (s *Sweep) SetConcurrency(n int) {
	if n < 1 {
		n = 1
	}
	if fit := fdFit(); fit > 0 && n > fit {
		n = fit // one socket per request in flight: no more than the open-file limit allows
	}
	s.mu.Lock()
	s.target = n
	s.mu.Unlock()
	s.poke()
}

// Concurrency is the current level's in-flight target (0 before the first
// level, and in rate mode).
func (s *Sweep) Concurrency() int { s.mu.Lock(); defer s.mu.Unlock(); return s.target }

// Stop ends the sweep gracefully: no new request is sent, the requests in
// flight run to their end and are counted, the current level is reported
// with what it has, and Run returns. Cancel Run's context instead to cut the
// in-flight requests short (they are recorded as cancelled, not failed).
func (s *Sweep) Stop() { s.mu.Lock(); s.stopping = true; s.mu.Unlock(); s.poke() }

func (s *Sweep) state() (paused, stopping bool, target int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused, s.stopping, s.target
}

// Run runs the sweep, emitting events on em (which may be nil) between the
// phase's start and finish, and returns what it measured. An error means
// the sweep could not start (no server, no model); failed requests are data
// in the result, not errors. When ctx is cancelled mid-sweep, Run returns
// the levels finished so far and ctx's error.
func (s *Sweep) Run(ctx context.Context, em *phases.Emitter) (res *Result, err error) {
	err = phases.Run(ctx, em, phases.Macro, s.params(), func(ctx context.Context) error {
		res, err = s.run(ctx, em)
		return err
	})
	return res, err
}

// Params are the sweep's parameters, as its start journals them.
func (s *Sweep) Params() map[string]any { return s.params() }

// params are the sweep's parameters, journalled with its start.
func (s *Sweep) params() map[string]any {
	c := s.cfg
	p := map[string]any{"url": shownURL(c.URL), "concurrency": c.Concurrency, "requests": c.Requests,
		"input_len": c.InputLen, "output_len": c.OutputLen}
	if c.Duration > 0 {
		p["duration_s"] = c.Duration.Seconds()
	}
	if c.Rate > 0 {
		p["rate"] = c.Rate
	}
	if c.slo != nil {
		p["slo"] = c.slo.String()
		p["slo_share"] = c.slo.share
	}
	if c.Deployment != nil {
		p["deployment"] = *c.Deployment
	}
	if c.Repeat > 1 {
		p["repeat"] = c.Repeat
	}
	if c.Search != "" {
		p["search"], p["search_tolerance"] = c.Search, c.SearchTolerance
	}
	if c.Rate > 0 || c.Search == phases.SearchRate {
		p["arrivals"], p["burstiness"] = c.Arrivals, c.shownBurstiness()
	}
	if c.LatencyFrom != LatencySent {
		p["latency_from"] = c.LatencyFrom
	}
	if w := c.workloadRecord(); w.Dataset != DatasetRandom || w.RangeRatio > 0 || w.PrefixLen > 0 {
		p["workload"] = w
	}
	p["seed"] = c.Seed
	return p
}

func (s *Sweep) run(ctx context.Context, em *phases.Emitter) (*Result, error) {
	cfg := s.cfg
	maxC := 1 // one open-loop level may come with no levels
	if n := len(cfg.Concurrency); n > 0 {
		maxC = cfg.Concurrency[n-1]
	}
	c := newClient(cfg, maxC)
	defer c.close()
	res := s.newResult()
	var sweepWarns []string
	warn := func(text string) {
		sweepWarns = append(sweepWarns, text)
		em.Emit(ctx, phases.KindMacroWarning, &phases.MacroWarning{Text: text})
	}
	pg, err := s.prepare(ctx, c, &cfg, res, maxC, warn)
	if err != nil {
		return nil, err
	}
	res.Path = newPath(cfg)
	c.measurePath(ctx, res.Path)
	res.Path.Warnings = pathWarnings(res.Path)
	em.Emit(ctx, phases.KindMacroPath, res.Path)
	for _, w := range res.Path.Warnings {
		warn(w)
	}
	defer func() { finishPath(res.Path, res.Levels) }()

	r := &runner{s: s, cfg: cfg, c: c, pg: pg, em: em, t0: time.Now(), promptCal: res.PromptCal, path: res.Path}
	r.warns.sweep = sweepWarns
	res.Definitions = definitions
	res.Workload = cfg.workloadRecord()
	defer func() { res.Warnings = r.warns.list() }()
	defer r.startSamplers(ctx, res)()
	defer func() {
		if n := r.jsonlNote(); n != "" {
			res.Notes = append(res.Notes, n)
		}
	}()
	if cfg.Search != "" {
		err := r.search(ctx, res)
		res.Continuous = c.continuous.Load()
		if err != nil {
			res.Stopped = "cancelled"
			return res, err
		}
		r.sloEnd(ctx, res)
		return res, nil
	}
	return r.runLevels(ctx, res)
}

// newResult is the sweep's result before its first request: what the
// configuration says.
func (s *Sweep) newResult() *Result {
	cfg := s.cfg
	res := &Result{URL: shownURL(cfg.URL), API: cfg.API, Started: time.Now().UTC().Format(time.RFC3339),
		InputLen: cfg.InputLen, OutputLen: cfg.OutputLen, Requests: cfg.Requests,
		DurationS: cfg.Duration.Seconds(), Warmup: cfg.Warmup, Rate: cfg.Rate, Levels: []phases.LevelResult{},
		MaxConcurrency: cfg.MaxInFlight,
		Deployment:     cfg.Deployment, LatencyFrom: cfg.LatencyFrom}
	if cfg.Rate > 0 || cfg.Search == phases.SearchRate {
		res.Arrivals, res.Burstiness = cfg.Arrivals, cfg.shownBurstiness()
	}
	return res
}

// prepare checks that the server answers, serves the model asked for
// (resolved into cfg) and takes one request with the sweep's settings,
// within the host's limits, and calibrates the prompts; it returns their
// generator.
func (s *Sweep) prepare(ctx context.Context, c *client, cfg *Config, res *Result, maxC int, warn func(string)) (*promptGen, error) {
	ids, err := s.resolveModel(ctx, c, cfg, res)
	if err != nil {
		return nil, err
	}
	res.Model = cfg.Model
	if err := checkModelLen(*cfg, cfg.Model, c.maxLen[cfg.Model]); err != nil {
		return nil, err
	}
	if err := checkFDs(maxC); err != nil {
		return nil, err
	}
	pg := newPromptGen(cfg.Seed)
	if tpw, ok := pg.calibrate(ctx, c, cfg.InputLen); ok {
		res.PromptCal = "tokenize"
		c.canTokenize.Store(true)
		c.logf("prompt length calibrated with /tokenize: %.3f tokens per word", tpw)
	} else {
		res.PromptCal = "estimate"
		warn("the server has no /tokenize: prompts are sized at one token per word (an estimate); each level's input_token_source says where its total_input_tokens came from")
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if w := cfg.trace.checkTokens(ctx, c, pg.tokensPerWrd); w != "" {
		warn(w)
	}
	if err := cfg.conv.checkFits(*cfg, c.maxLen[cfg.Model], pg.tokensPerWrd); err != nil {
		return nil, err
	}
	res.Preflight = "skipped"
	if !cfg.NoPreflight {
		if res.Preflight, err = preflight(ctx, c, pg, ids, warn); err != nil {
			return nil, err
		}
	}
	if ids != nil && !contains(ids, cfg.Model) {
		warn(fmt.Sprintf("--model %q is not in the server's /v1/models (it lists: %s); the server answers it", cfg.Model, listed(ids)))
	}
	return pg, nil
}

// startSamplers starts the metrics scraper and the GPU sampler the
// configuration has; the function it returns stops them, waits for them
// and records the GPU's end.
func (r *runner) startSamplers(ctx context.Context, res *Result) (stop func()) {
	cfg := r.cfg
	var wg sync.WaitGroup
	sctx, stopScrape := context.WithCancel(ctx)
	if cfg.Scraper != nil {
		r.sctx = sctx
		wg.Add(1)
		go func() { defer wg.Done(); r.scrapeLoop(sctx) }()
	}
	if cfg.GPU != nil {
		wg.Add(1)
		go func() { defer wg.Done(); _ = cfg.GPU.Run(sctx, r.em) }()
	}
	return func() {
		stopScrape()
		wg.Wait()
		r.edges.Wait()
		if cfg.GPU != nil {
			r.gpuEnd(res)
		}
	}
}

// runLevels runs the configured levels in turn (one level at the
// configured rate in rate mode) until the last, the plateau when the
// sweep stops there, or the operator's stop.
func (r *runner) runLevels(ctx context.Context, res *Result) (*Result, error) {
	cfg := r.cfg
	type lvl struct {
		c    int
		rate float64
	}
	var levels []lvl
	if cfg.Rate > 0 {
		levels = []lvl{{0, cfg.Rate}}
	} else {
		for _, n := range cfg.Concurrency {
			levels = append(levels, lvl{n, 0})
		}
	}
	for i, l := range levels {
		lr, err := r.runRepeated(ctx, l.c, l.rate)
		if lr != nil {
			r.levelDone(ctx, res, lr)
		}
		if err != nil {
			res.Stopped = "cancelled"
			res.Continuous = r.c.continuous.Load()
			return res, err
		}
		if i > 0 && l.rate == 0 && r.plateauCheck(ctx, res, cfg.StopAtPlateau) {
			res.Stopped = "plateau"
			break
		}
		if r.stopping() {
			res.Stopped = "stopped by the operator"
			break
		}
	}
	res.Continuous = r.c.continuous.Load()
	r.sloEnd(ctx, res)
	return res, nil
}

// levelDone records a finished level and announces it.
func (r *runner) levelDone(ctx context.Context, res *Result, lr *phases.LevelResult) {
	lr.MonotonePercentiles()
	res.Levels = append(res.Levels, *lr)
	r.em.Emit(ctx, phases.KindMacroLevel, lr)
	if lr.ClientBound {
		r.em.Emit(ctx, phases.KindMacroClientBound, &phases.ClientBound{Concurrency: lr.Concurrency, Rate: lr.Rate, Reason: lr.ClientBoundReason})
	}
}

// plateauCheck looks for the plateau in the levels so far, once; it
// reports whether the sweep stops there (stopAt and a plateau found).
func (r *runner) plateauCheck(ctx context.Context, res *Result, stopAt bool) bool {
	if res.Plateau != nil {
		return false
	}
	p := findPlateau(res.Levels)
	if p == nil {
		return false
	}
	explainPlateau(p, res.Levels, readLimits(ctx, r.cfg))
	p.Noise = noise(res.Levels, p)
	p.Steered = steeredLevels(res.Levels)
	res.Plateau = p
	r.em.Emit(ctx, phases.KindMacroPlateau, p)
	return stopAt
}

// stopping reports whether the operator asked the sweep to stop.
func (r *runner) stopping() bool {
	_, stopping, _ := r.s.state()
	return stopping
}

// findPlateau returns the smallest level C whose next level (normally 2C)
// adds less than 10% output throughput, or nil.
func findPlateau(levels []phases.LevelResult) *phases.Plateau {
	for i := 0; i+1 < len(levels); i++ {
		a, b := levels[i], levels[i+1]
		if a.Completed == 0 || b.Completed == 0 || a.OutputThroughput <= 0 || b.Concurrency <= a.Concurrency {
			continue
		}
		if b.OutputThroughput < 1.10*a.OutputThroughput {
			return &phases.Plateau{Concurrency: a.Concurrency, OutputThroughput: a.OutputThroughput}
		}
	}
	return nil
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// isConnectError reports whether err is a failure to reach the server at
// all (refused, unresolvable, unroutable), as opposed to an HTTP error.
func isConnectError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

func isAuthError(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.code == 401 || se.code == 403)
}

// steeredLevels are the concurrencies of the levels changed by hand.
func steeredLevels(ls []phases.LevelResult) []int {
	var out []int
	for _, l := range ls {
		if len(l.Steered) > 0 {
			out = append(out, l.Concurrency)
		}
	}
	return out
}

// PlateauOf is the plateau of levels measured elsewhere (several load
// agents' levels merged), found as a sweep finds its own; nil: none.
func PlateauOf(levels []phases.LevelResult) *phases.Plateau {
	p := findPlateau(levels)
	if p != nil {
		p.Noise = noise(levels, p)
		p.Steered = steeredLevels(levels)
	}
	return p
}

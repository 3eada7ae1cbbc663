// Package vllmemu is a vLLM-compatible HTTP server without a GPU: the
// OpenAI completion and chat routes (streamed or whole), /tokenize, /health
// and a /metrics that moves with its load, driven by a continuous-batching
// model of an engine's steps, with faults injected on request. The simulated
// deployment serves it; tests sweep it.
package vllmemu

import (
	"encoding/json"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the vLLM version the emulator reports on /version, and the one
// the simulated deployment's log and system probe show.
const Version = "0.12.0"

// Config configures the OpenAI-compatible emulator. The zero value
// of every field means its default; the defaults give a single-stream TPOT
// of 12.5 ms and an output throughput that stops growing near 1,500 tok/s
// at 128 concurrent requests (128 run at most; more wait in the queue),
// like an 8×H200 deployment of a large MoE model.
type Config struct {
	Model string // served model id, default moonshotai/Kimi-K2.5
	// StepTime is one engine step (one token to every running request) with
	// one request running, default 12.5ms.
	StepTime time.Duration
	// StepPerSeq is what each further running request adds to a step,
	// default 573µs (so step(128) ≈ 85 ms: 128 tokens per 85 ms ≈ 1,500 tok/s).
	StepPerSeq time.Duration
	// PrefillPerToken is what each prompt token being prefilled adds to the
	// step that admits its request, default 10µs.
	PrefillPerToken time.Duration
	// StepFunc, when set, is one step's time with batch requests running and
	// prefill prompt tokens prefilled in it (a model of the engine's step);
	// it replaces StepTime, StepPerSeq and PrefillPerToken.
	StepFunc func(batch, prefill int) time.Duration
	// MaxBatchedTokens, when set, is the most prompt tokens one step
	// prefills (vLLM's --max-num-batched-tokens with chunked prefill): the
	// waiting requests past it are admitted in the next steps (at least one
	// per step).
	MaxBatchedTokens int
	MaxNumSeqs       int // most requests running at once, default 128; the rest wait
	// TokensPerStep > 1 simulates speculative decoding: each decode step
	// emits up to this many tokens per request (1 + accepted drafts).
	TokensPerStep int
	// SpecAcceptRate is the chance each draft token is accepted when
	// TokensPerStep > 1; 0 means every draft is accepted.
	SpecAcceptRate float64
	MaxModelLen    int // default 262144
	KVCacheTokens  int // KV cache capacity in tokens, default 262,144; running requests are preempted past it
	// Fault injection, each a probability per completion request:
	FailureRate       float64 // HTTP 500 before any byte of the stream
	CutRate           float64 // the connection is cut mid-stream (no [DONE])
	ErrorAfter200Rate float64 // data: {"error": ...} mid-stream after HTTP 200
	Seed              int64   // for faults and acceptance, default 1
	// APIKey, when set, is required as "Authorization: Bearer <key>".
	APIKey string
	// RejectContinuousUsage answers 400 to stream_options.continuous_usage_stats,
	// as servers without it do.
	RejectContinuousUsage bool
	// ReasoningTokens makes the first N tokens of a chat answer
	// reasoning_content deltas, as a reasoning model's are.
	ReasoningTokens int
	// NoUsage ignores stream_options.include_usage (no usage in the stream).
	NoUsage bool
	// NoTokenize turns off /tokenize, as servers without it lack it.
	NoTokenize bool
	// ServeBeforeReady answers completions while /health still says 503
	// (the demo sweeps the serving engine while its Load pane replays a
	// load). A real server refuses them until ready.
	ServeBeforeReady bool
	// NotReady makes a new emulator start not ready (503 on /health and the
	// completion routes) until SetReady(true). By default a new emulator is
	// ready, so tests can use it directly; the simulated deployment marks it
	// not ready while its server loads.
	NotReady bool
	// CoarseTiming lets steps end up to a millisecond late instead of
	// waiting out each step's last 1.2 ms actively (which costs CPU but
	// makes the emulator's timing exact to a few microseconds).
	CoarseTiming bool
	// Jitter makes each step up to this fraction longer or shorter, at
	// random (a noisy machine: repeats differ).
	Jitter float64
	// Engine is the server the emulator answers as: "" or "vllm" (vLLM
	// V1's /metrics), or "sglang" (SGLang's sglang: metrics). The OpenAI
	// routes are the same for both.
	Engine string
}

// EngineSGLang makes the emulator's /metrics SGLang's.
const EngineSGLang = "sglang"

// The emulator's defaults.
const (
	DefaultModel           = "moonshotai/Kimi-K2.5"
	DefaultStepTime        = 12500 * time.Microsecond
	DefaultStepPerSeq      = 573 * time.Microsecond
	DefaultPrefillPerToken = 10 * time.Microsecond
	DefaultMaxNumSeqs      = 128
	DefaultMaxModelLen     = 262144
	DefaultKVCacheTokens   = 1 << 18
)

func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.StepTime <= 0 {
		c.StepTime = DefaultStepTime
	}
	if c.StepPerSeq <= 0 {
		c.StepPerSeq = DefaultStepPerSeq
	}
	if c.PrefillPerToken <= 0 {
		c.PrefillPerToken = DefaultPrefillPerToken
	}
	if c.MaxNumSeqs <= 0 {
		c.MaxNumSeqs = DefaultMaxNumSeqs
	}
	if c.TokensPerStep <= 0 {
		c.TokensPerStep = 1
	}
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	if c.KVCacheTokens <= 0 {
		c.KVCacheTokens = DefaultKVCacheTokens
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Emulator is a vLLM-compatible HTTP server driven by a continuous-batching
// model: each engine step emits one token (or several, with speculative
// decoding) to every running request, a step takes longer the more
// requests run, at most MaxNumSeqs run and the rest wait. Its /metrics
// moves with its load, under vLLM's metric names.
type Emulator struct {
	cfg Config
	// live is the configuration the scheduler steps with: cfg, or the one a
	// relaunch set (Relaunch).
	live   atomic.Pointer[Config]
	ready  atomic.Bool
	arrive chan *emuReq
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	rngMu sync.Mutex
	rng   *rand.Rand

	mu sync.Mutex // guards the figures below (written by the scheduler)
	st emuStats
	// gen is SGLang's gen_throughput gauge: generation tokens per second
	// between the last two scrapes at least a second apart.
	gen genRate
	// hit is SGLang's cache_hit_rate gauge, from prefix's totals.
	hit hitRate

	prefix *prefixCache // the prompts' blocks seen, and the tokens hit
	marks  atomic.Int64 // answers marked so far

	// The scheduler's per-step scratch, used by its goroutine only.
	stepITL  []float64
	stepDone []*emuReq
}

// State is the emulator's live state, for the simulated log's stats
// lines and for tests.
type State struct {
	Running, Waiting int
	KVCacheUsage     float64 // 0..1
	PromptTokens     int64   // totals since start
	GenerationTokens int64
	Preemptions      int64
	Succeeded        int64 // requests whose whole answer was sent
	Steps            int64
	// Faults injected so far, by kind.
	Injected500, InjectedCuts, InjectedErrors int64
	// The engine's own per-request TPOT (first to last token, as it
	// scheduled them): sum in seconds and count, for checking the
	// emulator kept its timing on a busy machine.
	TPOTSumSeconds float64
	TPOTRequests   int64
	// Prompt tokens the prefix cache held (vllm:prefix_cache_hits).
	PrefixHitTokens int64
}

// New starts an emulator's scheduler. Close stops it.
func New(cfg Config) *Emulator {
	cfg = cfg.withDefaults()
	e := &Emulator{cfg: cfg, arrive: make(chan *emuReq, 1024), quit: make(chan struct{}), done: make(chan struct{}),
		rng: rand.New(rand.NewSource(cfg.Seed)), prefix: newPrefixCache(cfg.KVCacheTokens)}
	e.live.Store(&cfg)
	e.st.init()
	e.ready.Store(!cfg.NotReady)
	go e.schedule()
	return e
}

// Relaunch sets the scheduling settings a server's new launch gives
// (MaxNumSeqs, MaxBatchedTokens, TokensPerStep, SpecAcceptRate and the
// step times); the steps after it use them. Its other fields are ignored.
func (e *Emulator) Relaunch(cfg Config) {
	c := e.cfg
	c.MaxNumSeqs, c.MaxBatchedTokens = cfg.MaxNumSeqs, cfg.MaxBatchedTokens
	c.TokensPerStep, c.SpecAcceptRate = cfg.TokensPerStep, cfg.SpecAcceptRate
	c.StepFunc, c.StepTime, c.StepPerSeq, c.PrefillPerToken = cfg.StepFunc, cfg.StepTime, cfg.StepPerSeq, cfg.PrefillPerToken
	c = c.withDefaults()
	e.live.Store(&c)
}

// sched is the configuration the scheduler steps with now.
func (e *Emulator) sched() *Config { return e.live.Load() }

// Live returns the configuration the scheduler steps with now (Config
// with the last Relaunch's settings).
func (e *Emulator) Live() Config { return *e.sched() }

// Config returns the configuration in effect (defaults filled in).
func (e *Emulator) Config() Config { return e.cfg }

// SetReady marks the server ready (it serves) or not (503, as while
// loading). Going not ready cuts every request in flight, as a server that
// stops does.
func (e *Emulator) SetReady(ready bool) {
	if e.ready.Swap(ready) && !ready {
		select {
		case e.arrive <- &emuReq{resetAll: true}:
		case <-e.done:
		}
	}
}

// Ready reports whether the emulator serves requests.
func (e *Emulator) Ready() bool { return e.ready.Load() }

// Close stops the scheduler; requests in flight are cut.
func (e *Emulator) Close() {
	e.once.Do(func() { close(e.quit) })
	<-e.done
}

// State returns the live state.
func (e *Emulator) State() State {
	e.mu.Lock()
	st := e.st.state
	e.mu.Unlock()
	_, st.PrefixHitTokens = e.prefix.totals()
	return st
}

func (e *Emulator) roll() float64 {
	e.rngMu.Lock()
	defer e.rngMu.Unlock()
	return e.rng.Float64()
}

func (e *Emulator) rollInt(n int) int {
	e.rngMu.Lock()
	defer e.rngMu.Unlock()
	return e.rng.Intn(n)
}

// ServeHTTP routes the vLLM API.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		if !e.ready.Load() {
			http.Error(w, "", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	case "/metrics":
		if e.cfg.Engine == EngineSGLang {
			e.serveSGLangMetrics(w)
			return
		}
		e.serveMetrics(w)
	case "/version":
		writeJSON(w, http.StatusOK, map[string]string{"version": Version})
	case "/v1/models":
		if !e.auth(w, r) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
			"id": e.cfg.Model, "object": "model", "created": 1727154331, "owned_by": "vllm",
			"root": e.cfg.Model, "max_model_len": e.cfg.MaxModelLen}}})
	case "/tokenize":
		if e.cfg.NoTokenize {
			http.NotFound(w, r)
			return
		}
		e.serveTokenize(w, r)
	case "/v1/completions":
		e.serveCompletion(w, r, false)
	case "/v1/chat/completions":
		e.serveCompletion(w, r, true)
	default:
		writeError(w, http.StatusNotFound, "NotFoundError", "Not Found: "+r.URL.Path)
	}
}

func (e *Emulator) auth(w http.ResponseWriter, r *http.Request) bool {
	if e.cfg.APIKey == "" || r.Header.Get("Authorization") == "Bearer "+e.cfg.APIKey {
		return true
	}
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeError writes vLLM's error body.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

// countTokens is the emulator's tokenizer: one token per word, two for
// words longer than seven bytes.
func countTokens(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		n++
		if len(f) > 7 {
			n++
		}
	}
	return n
}

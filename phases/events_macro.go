package phases

import (
	"fmt"
	"time"
)

// Macro-phase event kinds: the concurrency sweep.
const (
	KindMacroTick         = "macro.tick"    // one second of live figures (ephemeral)
	KindMacroLevel        = "macro.level"   // one finished concurrency level
	KindMacroPlateau      = "macro.plateau" // where throughput stops growing
	KindMacroLevelStarted = "macro.level_started"
	KindMacroServer       = "macro.server" // one /metrics scrape turned into figures (ephemeral)
	KindMacroClientBound  = "macro.client_bound"
	KindMacroWarning      = "macro.warning" // an estimate or a doubt about the measurement, said once
	KindMacroSLO          = "macro.slo"     // the largest concurrency meeting the sweep's SLO
	KindMacroPath         = "macro.path"    // how the load reaches the server, and what that costs
)

// MacroTick is one second of what the client saw, plus the level's progress.
type MacroTick struct {
	Concurrency   int     `json:"concurrency"`
	InFlight      int     `json:"in_flight"`
	TPOTp50ms     float64 `json:"tpot_p50_ms"`
	TPOTp99ms     float64 `json:"tpot_p99_ms"`
	TTFTp50ms     float64 `json:"ttft_p50_ms"`
	OutputTokS    float64 `json:"output_tok_s"`
	Completed     int     `json:"completed"`
	Failed        int     `json:"failed"`
	LevelProgress float64 `json:"level_progress"` // 0..1
	LevelElapsedS float64 `json:"level_elapsed_s"`
	Paused        bool    `json:"paused,omitempty"`
}

// ServerStats are figures from the server's /metrics, summed over engines.
type ServerStats struct {
	Available      bool     `json:"available"`
	Running        float64  `json:"running"`
	Waiting        float64  `json:"waiting"`
	KVCacheUsage   float64  `json:"kv_cache_usage"` // 0..1
	Preemptions    float64  `json:"preemptions_total"`
	GenTokS        float64  `json:"generation_tok_s"`
	SpecAcceptRate *float64 `json:"spec_accept_rate,omitempty"`
	Note           string   `json:"note,omitempty"`
	// At is when the scrape was taken; IntervalS the seconds GenTokS and
	// SpecAcceptRate cover (0 on the first scrape, which has no rate yet).
	At        time.Time `json:"t,omitzero"`
	IntervalS float64   `json:"interval_s,omitempty"`
	// Counter totals as read, so a level's summary can take exact deltas.
	GenTokensTotal    float64 `json:"generation_tokens_total,omitempty"`
	SpecAcceptedTotal float64 `json:"spec_accepted_tokens_total,omitempty"`
	SpecDraftTotal    float64 `json:"spec_draft_tokens_total,omitempty"`
	HasSpec           bool    `json:"spec_decode,omitempty"`
	Engines           int     `json:"engines,omitempty"`
	// The engine's step mix: prefill tokens, and the engine steps and the
	// tokens they held (vllm:iteration_tokens_total), as totals.
	PromptTokensTotal float64 `json:"prompt_tokens_total,omitempty"`
	StepsTotal        float64 `json:"engine_steps_total,omitempty"`
	StepTokensTotal   float64 `json:"engine_step_tokens_total,omitempty"`
	HasSteps          bool    `json:"engine_steps,omitempty"`
	// Engine is the server whose metrics these are ("vllm", "sglang").
	Engine string `json:"engine,omitempty"`
	// CacheHitRate is the server's prefix-cache hit rate, 0..1, where it
	// publishes one as a gauge (SGLang).
	CacheHitRate *float64 `json:"cache_hit_rate,omitempty"`
	// Signals beside the serving figures: vLLM's prefix-cache counters
	// (tokens queried and found cached) and speculative drafts, as totals;
	// SGLang's gauges of the mean accepted length and the requests
	// retracted (preempted) now.
	PrefixQueriesTotal float64  `json:"prefix_cache_queries_total,omitempty"`
	PrefixHitsTotal    float64  `json:"prefix_cache_hits_total,omitempty"`
	HasPrefix          bool     `json:"prefix_cache,omitempty"`
	SpecDraftsTotal    float64  `json:"spec_drafts_total,omitempty"`
	HasDrafts          bool     `json:"spec_drafts,omitempty"`
	SpecAcceptLength   *float64 `json:"spec_accept_length,omitempty"`
	Retracted          *float64 `json:"retracted,omitempty"`
}

// StepMix is what the engine ran over a level's throughput window, from its
// own counters: engine steps, the tokens they held, prompt against
// generation tokens.
type StepMix struct {
	WindowS          float64 `json:"window_s"`
	Steps            float64 `json:"steps"`
	StepTokens       float64 `json:"step_tokens"`
	PromptTokens     float64 `json:"prompt_tokens"`
	GenerationTokens float64 `json:"generation_tokens"`
	StepsPerS        float64 `json:"steps_per_s"`
	TokensPerStep    float64 `json:"tokens_per_step"`
	// DecodeTokens are the step tokens that were not prompt tokens (vLLM
	// counts a step's tokens as whole prompts plus generated tokens).
	DecodeTokens float64 `json:"decode_tokens"`
}

// LevelName names a level as every view writes it in a line of text:
// "C=8", or "3.333 req/s" for an open-loop level.
func LevelName(concurrency int, rate float64) string {
	if rate > 0 {
		return fmt.Sprintf("%.4g req/s", rate)
	}
	return fmt.Sprintf("C=%d", concurrency)
}

// LiveChangePrefix opens a level's note of a live concurrency change.
const LiveChangePrefix = "concurrency changed live from "

// LiveChange is a level's note and steered entry for a live concurrency
// change from → to, atS seconds into the level: every engine writes them so.
func LiveChange(from, to int, atS float64) (note, steered string) {
	return fmt.Sprintf("%s%d to %d at %.1fs", LiveChangePrefix, from, to, atS), fmt.Sprintf("concurrency %d → %d at %.1f s", from, to, atS)
}

// PausedPrefix opens a level's note of the time it was paused.
const PausedPrefix = "paused for "

// Paused is a level's note and steered entry for s seconds paused.
func Paused(s float64) (note, steered string) {
	return fmt.Sprintf("%s%.1fs during the level; throughput includes the pause", PausedPrefix, s), fmt.Sprintf("paused %.1f s", s)
}

// LevelResult is one finished level; field names follow vLLM bench serve JSON.
// MinRequests is the fewest completed requests a level's figures are
// quoted on without a flag.
const MinRequests = 10

// Few reports whether the level completed fewer than MinRequests requests
// (journals written before FewRequests existed included; a level with
// none completed has no figure to quote and is judged by its failures).
func (l *LevelResult) Few() bool {
	return l.FewRequests || (l.Completed > 0 && l.Completed < MinRequests)
}

type LevelResult struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"request_rate,omitempty"`
	Completed   int     `json:"completed"`
	// FewRequests flags a level with fewer than MinRequests completed
	// requests: too few to quote its percentiles or TPOT.
	FewRequests       bool           `json:"few_requests,omitempty"`
	Failed            int            `json:"failed"`
	Failures          map[string]int `json:"failures"`
	DurationS         float64        `json:"duration_s"`
	TotalInputTokens  int64          `json:"total_input_tokens"`
	TotalOutputTokens int64          `json:"total_output_tokens"`
	// ThroughputWindow says what DurationS and the throughputs cover:
	// "in_flight" (closed loop: from the first measured send until fewer
	// than C were in flight, every token received in it) or "measured"
	// (open loop: first measured send to last measured completion, the
	// measured requests' tokens, as vLLM bench computes it).
	ThroughputWindow  string  `json:"throughput_window,omitempty"`
	RequestThroughput float64 `json:"request_throughput"`
	OutputThroughput  float64 `json:"output_throughput"`
	// TotalTokenThroughput is input and output tokens per second over the
	// same window, as vLLM's total_token_throughput.
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	// MaxConcurrency is vLLM's max_concurrency: the level's concurrency
	// (0 for an open-loop level).
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	MeanTTFTms     float64 `json:"mean_ttft_ms"`
	MedianTTFTms   float64 `json:"median_ttft_ms"`
	P90TTFTms      float64 `json:"p90_ttft_ms"`
	StdTTFTms      float64 `json:"std_ttft_ms"`
	P99TTFTms      float64 `json:"p99_ttft_ms"`
	MeanTPOTms     float64 `json:"mean_tpot_ms"`
	MedianTPOTms   float64 `json:"median_tpot_ms"`
	P90TPOTms      float64 `json:"p90_tpot_ms"`
	StdTPOTms      float64 `json:"std_tpot_ms"`
	P99TPOTms      float64 `json:"p99_tpot_ms"`
	MeanITLms      float64 `json:"mean_itl_ms"`
	MedianITLms    float64 `json:"median_itl_ms"`
	P90ITLms       float64 `json:"p90_itl_ms"`
	StdITLms       float64 `json:"std_itl_ms"`
	P99ITLms       float64 `json:"p99_itl_ms"`
	// ITL per chunk, as vllm bench serve computes it: the gaps between
	// consecutive chunks that carry choices, whatever they hold.
	MeanITLChunkms   float64 `json:"mean_itl_chunk_ms"`
	MedianITLChunkms float64 `json:"median_itl_chunk_ms"`
	P90ITLChunkms    float64 `json:"p90_itl_chunk_ms"`
	P99ITLChunkms    float64 `json:"p99_itl_chunk_ms"`
	MeanE2ELms       float64 `json:"mean_e2el_ms"`
	MedianE2ELms     float64 `json:"median_e2el_ms"`
	P90E2ELms        float64 `json:"p90_e2el_ms"`
	StdE2ELms        float64 `json:"std_e2el_ms"`
	P99E2ELms        float64 `json:"p99_e2el_ms"`
	// Percentiles are the percentiles asked for (--metric-percentiles of
	// --percentile-metrics), by vLLM's key, e.g. p95_ttft_ms; written as
	// keys of the level (MarshalJSON).
	Percentiles map[string]float64 `json:"-"`
	// EventsPerRead is how bunched the streams arrived: token events per
	// read of the response body that brought any (1 when each came by
	// itself; more when the path or the client held them back).
	EventsPerRead float64        `json:"events_per_read,omitempty"`
	MedianTTFBms  float64        `json:"median_ttfb_ms"`  // first byte (headers)
	MedianTTFATms float64        `json:"median_ttfat_ms"` // first non-reasoning token
	TokenSource   string         `json:"token_source"`    // the least exact source any request used
	TokenSources  map[string]int `json:"token_sources,omitempty"`
	// InputTokenSource says where TotalInputTokens came from: "usage"
	// (the server's prompt_tokens), "tokenize" (prompts sized with the
	// server's /tokenize) or "estimate" (one token per word).
	InputTokenSource  string   `json:"input_token_source,omitempty"`
	MeanInFlight      float64  `json:"mean_in_flight"` // time-weighted over the measured window
	ClientCPUs        float64  `json:"client_cpu_s"`
	MaxSendLagms      float64  `json:"max_send_lag_ms"`
	P99SendLagms      float64  `json:"p99_send_lag_ms"`
	ClientBound       bool     `json:"client_bound"`
	ClientBoundReason string   `json:"client_bound_reason,omitempty"`
	Notes             []string `json:"notes,omitempty"`
	// MedianSendLagms is the median send lag (scheduling delay).
	MedianSendLagms float64 `json:"p50_send_lag_ms"`
	// Schedule is an open-loop level's intended sends against its actual
	// ones (nil in a closed loop).
	Schedule *Schedule `json:"schedule,omitempty"`
	// Sessions is a multi-turn level's users and their sessions: per turn
	// index and per session (nil for single requests).
	Sessions *SessionLevel `json:"sessions,omitempty"`
	// Agents are the load agents a level split over several ran on, each
	// with its share, clock offset and self-audit (nil: one client).
	Agents []AgentAudit `json:"agents,omitempty"`
	// OverSaturated: TTFT and the requests in flight grew with time inside
	// the level (Saturation says by how much): the server did not keep up,
	// and the level's figures depend on how long it ran.
	OverSaturated bool   `json:"over_saturated,omitempty"`
	Saturation    string `json:"saturation,omitempty"`
	// Steered says what the operator changed by hand while the level ran
	// (its concurrency live, a pause), e.g. "concurrency 2 → 4 at 3.1 s":
	// the level measured something other than its plan, so the budget
	// does not take it over a level that ran as planned, and the table,
	// the notebook and compare mark it.
	Steered []string `json:"steered,omitempty"`
	// Warnings are the level's estimates and doubts, said aloud.
	Warnings []string `json:"warnings,omitempty"`
	// FailureExamples holds one example per distinct error (a bounded few).
	FailureExamples []FailureExample `json:"failure_examples,omitempty"`
	Server          *ServerLevel     `json:"server,omitempty"`
	// PrefillWait is how many prompt tokens the level's running requests
	// waited for, from the client's timestamps (nil when none).
	PrefillWait *PrefillWait `json:"prefill_wait,omitempty"`
	// GPU is the GPUs over the level's throughput window (a GPU sampler ran).
	GPU *GPULevel `json:"gpu,omitempty"`
	// Goodput is set when the sweep has an SLO.
	Goodput *Goodput `json:"goodput,omitempty"`
	// Repeats are the level's figures over its repeated runs (--repeat).
	Repeats *Repeats `json:"repeats,omitempty"`
}

// PrefillWait is what a level's running requests waited for while others'
// prompts were prefilled: each prompt's tokens count once for each request
// decoding when it was prefilled (its first token's time less half a step).
type PrefillWait struct {
	Requests int `json:"requests"` // the completed requests read, warm-up ones included
	// DecodeBatch is the mean number of requests decoding while a prompt
	// token was prefilled (weighted by prompt tokens): C−1 when every
	// arrival finds the others running, less when arrivals come together
	// (a closed loop's start, requests finishing in step).
	DecodeBatch float64 `json:"decode_batch"`
	// PromptTokensPerToken is prompt tokens waited for per output token
	// after the first: Σ prompt tokens × requests decoding ÷ Σ (output − 1).
	PromptTokensPerToken float64 `json:"prompt_tokens_per_output_token"`
	// StallMsPerToken is the wall time the measured requests' token gaps
	// held beyond their clean gap when another request's first token came
	// inside them (prefills between their steps, or prefill chunks in
	// them), per output token after the first; CleanGapMs their mean clean
	// gap (the median of the gaps that saw no first token), Measured the
	// requests read (0: not measured).
	StallMsPerToken float64 `json:"stall_ms_per_token,omitempty"`
	CleanGapMs      float64 `json:"clean_gap_ms,omitempty"`
	Measured        int     `json:"stall_requests,omitempty"`
	// CleanShare is the share of those gaps that held no first token.
	CleanShare float64 `json:"clean_share,omitempty"`
}

// Goodput is a level's figures under the sweep's SLO (vLLM's definition:
// a request is good when it succeeded and met every bound).
type Goodput struct {
	Good           int     `json:"good_requests"`
	Share          float64 `json:"share"` // of all the level's requests, failed ones included
	RequestGoodput float64 `json:"request_goodput"`
	TokenGoodput   float64 `json:"output_token_goodput"`
	Met            bool    `json:"met"` // the share reached the SLO's required share
}

// Repeats are a level's figures over N runs: each figure's mean and the
// half-width of its 95% confidence interval (Student's t).
type Repeats struct {
	N    int                `json:"n"`
	Mean map[string]float64 `json:"mean"`
	CI95 map[string]float64 `json:"ci95"`
	Runs []float64          `json:"output_throughput_runs"`
}

// ServerLevel summarises /metrics over one level.
type ServerLevel struct {
	Available       bool     `json:"available"`
	MeanRunning     float64  `json:"mean_running"`
	MeanWaiting     float64  `json:"mean_waiting"`
	MaxKVCacheUsage float64  `json:"max_kv_cache_usage"`
	Preemptions     float64  `json:"preemptions"`
	GenerationTokS  float64  `json:"generation_tok_s"`
	SpecAcceptRate  *float64 `json:"spec_accept_rate,omitempty"`
	// Samples is how many scrapes the level had (available or not);
	// MaxWaiting the longest queue seen.
	Samples    int     `json:"samples,omitempty"`
	MaxWaiting float64 `json:"max_waiting,omitempty"`
	Note       string  `json:"note,omitempty"`
	// GenerationWindow is "client_window" when GenerationTokS was read at
	// the edges of the client's throughput window (WindowS seconds, the
	// server's and this client's tokens beside each other); else it spans
	// the level's scrapes.
	GenerationWindow       string  `json:"generation_window,omitempty"`
	WindowS                float64 `json:"window_s,omitempty"`
	WindowGenerationTokens float64 `json:"window_generation_tokens,omitempty"`
	WindowClientTokens     int64   `json:"window_client_tokens,omitempty"`
	// TokensAgree: the two agree within 2%; else TokenAgreement says why.
	TokensAgree    bool   `json:"tokens_agree,omitempty"`
	TokenAgreement string `json:"token_agreement,omitempty"`
	// The scheduler over the level: the most requests seen running, the
	// share of scrapes at that many, and the share with requests waiting.
	MaxRunning        float64 `json:"max_running,omitempty"`
	AtMaxRunningShare float64 `json:"at_max_running_share,omitempty"`
	WaitingShare      float64 `json:"waiting_share,omitempty"`
	// StepMix is the engine's steps over the throughput window (nil when
	// the server counts no steps).
	StepMix *StepMix `json:"step_mix,omitempty"`
	// Engine is the server that published the figures ("vllm", "sglang").
	Engine string `json:"engine,omitempty"`
	// PrefixCacheHitRate is the prefix cache's hit rate over the level:
	// cached over queried prompt tokens (vLLM's counters' deltas), or the
	// mean of SGLang's cache_hit_rate gauge; nil when the server has none.
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// SpecAcceptLength is speculative decoding's mean accepted length over
	// the level, the bonus token included: 1 + accepted tokens ÷ drafts
	// (vLLM's counters), or the mean of SGLang's spec_accept_length gauge.
	SpecAcceptLength *float64 `json:"spec_accept_length,omitempty"`
	// MaxRetracted is the most requests SGLang had retracted (its
	// preemption) at one scrape; vLLM's preemptions are counted in
	// Preemptions.
	MaxRetracted *float64 `json:"max_retracted,omitempty"`
}

// Plateau is the smallest C whose doubling adds less than 10% output throughput.
type Plateau struct {
	Concurrency      int     `json:"concurrency"`
	OutputThroughput float64 `json:"output_throughput"`
	// Reason is what limits throughput there: client_bound, kv_cache,
	// max_num_seqs, engine_step, power_throttled, clock_throttled or
	// unknown; Evidence the one line that
	// shows it and what to do.
	Reason   string `json:"reason,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	// The server's limits the verdict was judged with: its --max-num-seqs
	// (0: not known), where that was read, and whether the launch command
	// or the server's log was read at all. explain judges every level of
	// the sweep with them.
	MaxNumSeqs       int    `json:"max_num_seqs,omitempty"`
	MaxNumSeqsSource string `json:"max_num_seqs_source,omitempty"`
	LimitsLooked     bool   `json:"limits_looked,omitempty"`
	// Noise is set when the plateau's levels differ by less than their
	// repeats' 95% confidence intervals.
	Noise string `json:"noise,omitempty"`
	// SLO names the largest concurrency that met the sweep's SLO.
	SLO string `json:"slo,omitempty"`
	// Steered lists the levels the operator changed by hand (their
	// concurrency as reported) among those the plateau was found from.
	Steered []int `json:"steered,omitempty"`
}

// LevelStarted announces a level.
type LevelStarted struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"request_rate,omitempty"`
	Requests    int     `json:"requests,omitempty"`
	DurationS   float64 `json:"duration_s,omitempty"`
	// Run of Runs when each level runs several times (--repeat).
	Run  int `json:"run,omitempty"`
	Runs int `json:"runs,omitempty"`
}

// FailureExample is one distinct error of a level and how often it came.
// Kind is the failure reason (http_<status>, error_event, cut_stream,
// timeout, connect_error, ...); Status the HTTP status when there was one;
// Body the first 200 bytes of the error body or event, or the error text.
type FailureExample struct {
	Kind   string `json:"kind"`
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	Count  int    `json:"count"`
}

// MacroWarning is a sweep-wide estimate or doubt (Concurrency 0), or one
// of a level's, said as it is found.
type MacroWarning struct {
	Concurrency int    `json:"concurrency,omitempty"`
	Text        string `json:"text"`
}

// The ways a sweep's requests reach the server (MacroPath.Kind).
const (
	PathDirect = "direct" // from this machine's own network
	PathSSH    = "ssh"    // through the SSH connection to the host
	PathHost   = "host"   // from the server's host itself (--loadgen host)
)

// MacroPath is how the sweep's requests reached the server and what that
// path does to the figures: the round trip of a small request over it
// before the first level, how bunched each level's streams arrived, and
// what it adds or hides, with the fix.
type MacroPath struct {
	Kind string `json:"kind"`          // PathDirect, PathSSH or PathHost
	Via  string `json:"via,omitempty"` // ssh: the host whose connection carried the load
	// Nodelay says how the SSH server was made to send each write at once
	// ("pty", "exec"), or "none" when it could not be (NodelayNote says why).
	Nodelay     string  `json:"nodelay,omitempty"`
	NodelayNote string  `json:"nodelay_note,omitempty"`
	Probe       string  `json:"probe,omitempty"` // the small request timed, e.g. "GET /health"
	Probes      int     `json:"probes"`
	RTTp50ms    float64 `json:"rtt_p50_ms"`
	RTTp99ms    float64 `json:"rtt_p99_ms"`
	// Levels are each level's events per read, as they finished.
	Levels []PathLevel `json:"levels"`
	// Warnings say what the path adds to or hides in the figures, with the fix.
	Warnings []string `json:"warnings,omitempty"`
	// Host is the GPU host the load generator ran on (kind host); Copied
	// says profdeck was copied there for this sweep (else its cache had
	// it), CopyS what checking and copying took.
	Host   string  `json:"host,omitempty"`
	Copied bool    `json:"copied,omitempty"`
	CopyS  float64 `json:"copy_s,omitempty"`
}

// PathLevel is how bunched one level's streams arrived.
type PathLevel struct {
	Concurrency   int     `json:"concurrency"`
	Rate          float64 `json:"request_rate,omitempty"`
	EventsPerRead float64 `json:"events_per_read"`
}

// ClientBound says the client, not the server, limited a level.
type ClientBound struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"request_rate,omitempty"` // an open-loop level's rate
	Reason      string  `json:"reason"`
}

func init() {
	Register(KindMacroTick, Macro, MacroTick{}, true)
	Register(KindMacroLevel, Macro, LevelResult{}, false)
	Register(KindMacroPlateau, Macro, Plateau{}, false)
	Register(KindMacroLevelStarted, Macro, LevelStarted{}, false)
	Register(KindMacroServer, Macro, ServerStats{}, true)
	Register(KindMacroClientBound, Macro, ClientBound{}, false)
	Register(KindMacroWarning, Macro, MacroWarning{}, false)
	Register(KindMacroSLO, Macro, SLOMet{}, false)
	Register(KindMacroPath, Macro, MacroPath{}, false)
}

// SLOMet names the largest concurrency whose level met the sweep's SLO
// (0: none did), and for open-loop levels the largest rate or trace replay
// speed.
type SLOMet struct {
	Spec           string  `json:"spec"`
	MaxConcurrency int     `json:"max_concurrency"`
	MaxRate        float64 `json:"max_rate,omitempty"`
	MaxSpeed       float64 `json:"max_speed,omitempty"`
	Text           string  `json:"text"`
}

// AgentAudit is one load agent's part of a level run over several: what
// it completed, its clock against the coordinator's (offset ± uncertainty)
// and its client's self-audit; Lost says why it went away mid-level.
type AgentAudit struct {
	Agent         string  `json:"agent"`
	Completed     int     `json:"completed"`
	OffsetMs      float64 `json:"clock_offset_ms"`
	UncertaintyMs float64 `json:"clock_uncertainty_ms"`
	// StartMs is when it started against the level's start, its offset
	// applied.
	StartMs       float64 `json:"start_ms"`
	CPUFraction   float64 `json:"cpu_fraction"`
	P99SendLagms  float64 `json:"p99_send_lag_ms"`
	EventsPerRead float64 `json:"events_per_read,omitempty"`
	ClientBound   bool    `json:"client_bound,omitempty"`
	Lost          string  `json:"lost,omitempty"`
}

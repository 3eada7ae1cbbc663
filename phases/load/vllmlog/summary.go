package vllmlog

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// States of a load as the log tells it.
const (
	StateLoading = "loading"
	StateLoaded  = "loaded" // weights on the GPUs, not serving yet
	StateReady   = "ready"  // the log says the API server started
	StateFailed  = "failed"
)

// Shards is the weight-loading bar's count.
type Shards struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Rank is what the log tells about one worker rank.
type Rank struct {
	Rank int  `json:"rank"`
	PID  *int `json:"pid"`
	// Name is the rank's prefix where the engine names ranks rather than
	// processes (SGLang's "TP3", "DP1 TP1").
	Name       string   `json:"name,omitempty"`
	Host       string   `json:"host,omitempty"` // the Ray actor's address, "" on the local host
	WeightsGiB *float64 `json:"weights_gib"`
	// Inferred is true when the rank was not printed but deduced (a V0
	// driver without a prefix is rank 0; unnamed workers take the remaining
	// ranks in pid order, the order vLLM starts them in).
	Inferred bool `json:"rank_inferred,omitempty"`
}

// Failure is the failure the log shows, with its evidence line.
type Failure struct {
	Kind string `json:"kind"`
	// Stage is where the load was when it failed: the innermost
	// traceback frame that names a stage (load_model, profile_run,
	// capture_model, ...), else the stage reached, or the one after the
	// weights when they were loaded.
	Stage string `json:"stage"`
	Line  string `json:"line"`
	Rank  int    `json:"-"`
	// When is "startup" for a failure before the server was ready,
	// "serving" for one after (or in a request's engine step), "" when
	// the log does not say.
	When string `json:"when"`
	// Component is the part that failed: "loader", "worker",
	// "engine_core", "api_server", SGLang's "scheduler",
	// "tokenizer_manager", "detokenizer", "dp_controller"; "" when the
	// log does not say.
	Component string `json:"component"`
}

// Stall is a wait the log reports while the load or the server is stuck:
// a shared-memory broadcast with no free block, an NCCL collective waited on.
type Stall struct {
	Kind    string  `json:"kind"` // StallSHM, StallNCCL, StallEngineWait
	Seconds float64 `json:"seconds,omitempty"`
	Time    string  `json:"time,omitempty"` // the log's HH:MM:SS
	Line    string  `json:"line"`
}

// Summary is the whole log's story so far; it is what `profdeck parse
// vllm-log` prints.
type Summary struct {
	// Engine is the engine that wrote the log: "vllm", or "sglang" once
	// a line shows SGLang wrote it.
	Engine      string   `json:"engine"`
	Version     *string  `json:"vllm_version"`
	State       string   `json:"state"`
	Stage       string   `json:"stage"`
	Shards      *Shards  `json:"shards"`
	WeightsGiB  *float64 `json:"weights_gib"`
	LoadSeconds *float64 `json:"load_seconds"`
	// WeightsReadSeconds is the weights' read alone ("Loading weights
	// took S seconds"; the slowest rank's), where LoadSeconds is the whole
	// model's load ("Model loading took … and S seconds"), or the read
	// when the log gives nothing else.
	WeightsReadSeconds *float64 `json:"weights_read_seconds"`
	KVCacheTokens      *int64   `json:"kv_cache_tokens"`
	KVCacheGiB         *float64 `json:"kv_cache_gib"`
	Ranks              []Rank   `json:"ranks"`
	Failure            *Failure `json:"failure"`
	// ReadyAt is the log's time (HH:MM:SS) of the first line saying the
	// API server serves.
	ReadyAt *string `json:"ready_at"`
	// Hosts are the Ray actors' addresses of a multi-node log.
	Hosts  []string `json:"hosts,omitempty"`
	Stalls []Stall  `json:"stalls,omitempty"`
	// Dropped says what the log gave that was not kept: a value no
	// deployment has (a negative size), ranks past maxNamedRanks; each
	// said once. DroppedRanks counts the processes and ranks not kept.
	Dropped      []string `json:"dropped,omitempty"`
	DroppedRanks int      `json:"dropped_ranks,omitempty"`
	Deployment

	setup       Setup  // what the lines said, merged (Deployment is read from it)
	failedReady bool   // the failure came after the ready line
	servingEv   bool   // a failing traceback or error names serving (an engine step, a request)
	startupEv   bool   // … or the start (an init, a load, "failed to start")
	tbComp      string // the part a failing traceback's first telling frame is in
	// driverLogged: the unprefixed process set up its communicator.
	driverLogged bool

	tbStage     int // the furthest stage a failing traceback's frames name, -1 when none
	v0Workers   bool
	modelLoaded bool

	failLevel   int
	loaded      bool
	ready       bool
	stage       int
	weightsRead float64
	blocks      int64
	kvTokens    int64
	concTokens  int64
	concX       float64
	procs       map[procKey]*procInfo
	driver      *procInfo // the unprefixed V0 driver, rank 0
}

// NewSummary returns an empty summary.
func NewSummary() *Summary {
	return &Summary{State: StateLoading, Stage: phases.StageStarting, procs: map[procKey]*procInfo{}, tbStage: -1}
}

// Add folds one record into the summary.
func (s *Summary) Add(r Record) {
	if r.Engine != "" {
		s.Engine = r.Engine
		if r.Proc != "" && r.Rank >= 0 && len(s.procs) < maxNamedRanks {
			s.proc(r).rank = r.Rank
		}
	}
	if r.Version != "" && s.Version == nil {
		v := r.Version
		s.Version = &v
	}
	if st := r.Stage(); st != "" && phases.StageIndex(st) > s.stage {
		s.stage = phases.StageIndex(st)
	}
	s.addKind(r)
	if r.Traceback || r.Frame != "" {
		s.traceback(r)
	}
	if r.Host != "" {
		s.addHost(r.Host)
	}
	s.addProcess(r)
	if r.Setup != nil {
		s.setup.merge(r.Setup)
	}
	s.finish()
}

// addKind folds what a record of its kind says.
func (s *Summary) addKind(r Record) {
	switch r.Kind {
	case KindRankInfo:
		if r.PID != 0 {
			s.proc(r).rank = r.Rank
		} else if r.Engine == "" {
			s.proc(r).rankLine = true // the unprefixed process said its rank
		}
	case KindLoadStart:
		if strings.Contains(r.Msg, "drafter") {
			// A speculative drafter's weights load after the model's:
			// loading again until it says it is loaded.
			s.loaded = false
		}
	case KindShardBar:
		s.Shards = &Shards{Done: r.Bar.Done, Total: r.Bar.Total}
	case KindWeightsRead:
		s.weightsRead = math.Max(s.weightsRead, r.Seconds)
		s.loaded = true
	case KindModelLoaded:
		s.addModelLoaded(r)
	case KindKVCache:
		s.kvTokens = r.Tokens
		s.loaded = true
		if r.GiB > 0 {
			g := r.GiB
			s.KVCacheGiB = &g
		}
	case KindKVBlocks:
		s.blocks = r.Blocks
		s.loaded = true
	case KindConcurrency:
		s.concTokens, s.concX = r.Tokens, r.Value
	case KindKVMemory:
		g := r.GiB
		s.KVCacheGiB = &g
		if w := r.WeightsGiB; w > 0 && s.WeightsGiB == nil {
			s.WeightsGiB = &w
		}
	case KindCompileDone:
		s.loaded = true
		if s.CompileSeconds == nil || r.Seconds > *s.CompileSeconds {
			sec := r.Seconds
			s.CompileSeconds = &sec
		}
	case KindCompile, KindGraphs, KindGraphsDone, KindEngineInit:
		s.loaded = true
	case KindReady:
		s.ready = true
		if s.ReadyAt == nil && r.Time != "" {
			t := r.Time
			s.ReadyAt = &t
		}
	case KindFailure:
		s.noteWhen(r)
		s.fail(r, r.Failure, strength(r.Strong))
	case KindWarning:
		if r.Level == "ERROR" || r.Level == "CRITICAL" {
			// An error line from any process of the engine ends the
			// load, of unknown kind until a stronger line names it.
			s.noteWhen(r)
			s.fail(r, FailUnknown, failError)
		}
	case KindWatchdog:
		if len(s.Stalls) < maxStalls {
			s.Stalls = append(s.Stalls, Stall{Kind: stallKind(r), Seconds: r.Seconds, Time: r.Time, Line: strings.TrimSpace(r.Text)})
		}
	}
}

// addModelLoaded folds a rank's "model loading took" line: its weights
// and the load's time (the largest of the ranks').
func (s *Summary) addModelLoaded(r Record) {
	s.loaded, s.modelLoaded = true, true
	g := r.GiB
	if g < 0 {
		s.drop(fmt.Sprintf("a weights size of %g GiB (%s): not a size, not kept", g, strings.TrimSpace(clip(r.Text))))
		return
	}
	s.proc(r).weights = &g
	if s.WeightsGiB == nil || g > *s.WeightsGiB {
		s.WeightsGiB = &g
	}
	if r.Seconds > 0 && (s.LoadSeconds == nil || r.Seconds > *s.LoadSeconds) {
		sec := r.Seconds
		s.LoadSeconds = &sec
	}
}

// maxStalls bounds the stalls kept (a hung server repeats its warning).
const maxStalls = 64

func stallKind(r Record) string {
	switch {
	case strings.Contains(r.Msg, "shared memory broadcast"):
		return StallSHM
	case strings.Contains(r.Msg, "MQLLMEngine"):
		return StallEngineWait
	}
	return StallNCCL
}

// Stall kinds.
const (
	StallSHM        = "shm_broadcast" // "No available shared memory broadcast block found in 60 seconds"
	StallNCCL       = "nccl_wait"     // torch's NCCL watchdog: a collective not completed
	StallEngineWait = "engine_wait"   // V0's client waiting for output from its engine
)

// fail records a failure: the first one, or a root cause after a
// consequence. Its stage is where the load was then.
func (s *Summary) fail(r Record, kind string, level int) {
	if s.Failure != nil && level <= s.failLevel {
		return
	}
	if s.ready && level <= failTraceback && componentOf(r) == CompAPIServer {
		// A request's error while serving (a bad prompt, a client gone)
		// is the API server answering it, not the server failing.
		return
	}
	stage := phases.StageOrder[s.stage]
	if s.Failure != nil {
		stage = s.Failure.Stage
	} else if s.ready {
		stage = phases.StageReady
	} else if stage == phases.StageWeights && s.modelLoaded {
		// The weights are on the GPUs: the profiling run that sizes
		// the KV cache is what comes next.
		stage = phases.StageKVCache
	}
	comp := componentOf(r)
	if comp == "" && s.Failure != nil {
		comp = s.Failure.Component
	}
	s.Failure = &Failure{Kind: kind, Stage: stage, Line: strings.TrimSpace(r.Text), Rank: r.Rank, Component: comp}
	s.failLevel = level
	s.failedReady = s.ready
}

// Failure evidence, weakest first: a traceback that names nothing, a
// message naming a consequence (a worker died), a root cause (OOM, NCCL).
const (
	failError     = 0 // an ERROR line that names nothing
	failTraceback = iota
	failConsequence
	failRoot
)

func strength(strong bool) int {
	if strong {
		return failRoot
	}
	return failConsequence
}

// traceback folds a traceback line (or an error naming a method): a
// traceback printed at ERROR level, or raw on a vLLM process's own stream,
// ends that process; an unprefixed one counts once its exception shows.
func (s *Summary) traceback(r Record) {
	errLevel := r.Level == "ERROR" || r.Level == "CRITICAL"
	if !errLevel && r.Level != "" {
		return
	}
	if st := FrameStage(r.Frame); st != "" && phases.StageIndex(st) > s.tbStage {
		s.tbStage = phases.StageIndex(st)
	}
	if st := calledStage(r); st != "" && phases.StageIndex(st) > s.tbStage {
		// The last code line of a traceback cut short calls the stage.
		s.tbStage = phases.StageIndex(st)
	}
	s.noteWhen(r)
	if s.tbComp == "" && r.Frame != "" {
		s.tbComp = frameComponent(r.Msg)
	}
	if !errLevel && r.Proc == "" && r.Exception == "" {
		if strings.Contains(r.Msg, "Traceback (most recent call last)") {
			// An unprefixed traceback: a failure of unknown kind until
			// its exception names it (the paste may end before it).
			s.fail(r, FailUnknown, failError)
		}
		return
	}
	kind, strong := exceptionKind(r.Exception, r.Msg)
	level := strength(strong)
	if kind == "" {
		kind, level = FailEngineFailed, failTraceback
		if isWorkerProc(r.Proc) {
			kind = FailWorkerDied
		}
	}
	s.fail(r, kind, level)
}

func (s *Summary) addHost(h string) {
	for _, x := range s.Hosts {
		if x == h {
			return
		}
	}
	if len(s.Hosts) < 256 {
		s.Hosts = append(s.Hosts, h)
		sort.Strings(s.Hosts)
	}
}

// finish derives the exported fields from what was seen.
func (s *Summary) finish() {
	if s.Engine == "" {
		s.Engine = EngineVLLM
	}
	s.Stage = phases.StageOrder[s.stage]
	if s.Failure != nil && s.tbStage >= 0 {
		s.Failure.Stage = phases.StageOrder[s.tbStage]
	}
	s.finishDeployment()
	switch {
	case s.Failure != nil:
		s.State = StateFailed
	case s.ready:
		s.State = StateReady
		s.Stage = phases.StageReady
	case s.loaded:
		s.State = StateLoaded
	default:
		s.State = StateLoading
	}
	if s.weightsRead > 0 {
		w := s.weightsRead
		s.WeightsReadSeconds = &w
		if s.LoadSeconds == nil {
			s.LoadSeconds = &w
		}
	}
	switch {
	case s.kvTokens > 0:
		t := s.kvTokens
		s.KVCacheTokens = &t
	case s.blocks > 0:
		t := s.blocks * int64(s.blockSize())
		s.KVCacheTokens = &t
	}
}

// Finish lists the ranks (inferring the unnamed ones); call it before
// reading Ranks. Read calls it.
func (s *Summary) Finish() *Summary {
	s.finish()
	s.Ranks = s.ranks()
	return s
}

// blockSize is V0's KV block size: read back from the concurrency line when
// there is one (tokens × concurrency ÷ blocks, a power of two), else vLLM's
// CUDA default of 16.
func (s *Summary) blockSize() int {
	if s.concTokens > 0 && s.concX > 0 && s.blocks > 0 {
		est := float64(s.concTokens) * s.concX / float64(s.blocks)
		best, bestErr := 16, math.Inf(1)
		for b := 1; b <= 1024; b *= 2 {
			if e := math.Abs(math.Log(est / float64(b))); e < bestErr {
				best, bestErr = b, e
			}
		}
		return best
	}
	return 16
}

// maxDropped bounds the things Dropped says.
const maxDropped = 16

// drop says once that something the log gave was not kept.
func (s *Summary) drop(msg string) {
	if len(s.Dropped) < maxDropped && !slices.Contains(s.Dropped, msg) {
		s.Dropped = append(s.Dropped, msg)
	}
}

// clip is a log line cut to a length a message can quote.
func clip(line string) string {
	if len(line) > 120 {
		return strings.ToValidUTF8(line[:120], "") + "…"
	}
	return line
}

package vllmlog

import "github.com/profdeck/profdeck/phases"

// Kind classifies one log record.
type Kind int

// Record kinds. KindOther is every line that is not recognised (third-party
// banners, garbled concurrent output, access logs): normal, never an error.
const (
	KindOther       Kind = iota
	KindVersion          // Version holds the vLLM version
	KindRankInfo         // a "rank R in world size W" or "world_size=W rank=R" line
	KindLoadStart        // "Starting to load model X..."
	KindShardBar         // Bar holds the weight-loading bar (rank 0 only)
	KindWeightsRead      // "Loading weights took S seconds" (Seconds)
	KindModelLoaded      // "Model loading took X GiB and S seconds" (GiB, Seconds)
	KindCompile          // a torch.compile step
	KindCompileDone      // "torch.compile takes S s in total" (Seconds)
	KindKVMemory         // KV cache memory in GiB (GiB; negative means no room)
	KindKVCache          // "GPU KV cache size: N tokens" (Tokens)
	KindKVBlocks         // V0 "# GPU blocks: N" (Blocks)
	KindConcurrency      // "Maximum concurrency for T tokens per request: Cx" (Tokens=T, Value=C)
	KindGraphs           // CUDA-graph capture started or progressing (Bar when a bar)
	KindGraphsDone       // "Graph capturing finished in S secs, took X GiB"
	KindEngineInit       // "init engine (profile, create kv cache, warmup model) took S seconds"
	KindReady            // the API server says it is serving (a hint; /health is the proof)
	KindFailure          // Failure names the kind
	KindWatchdog         // "No available shared memory broadcast block found in 60 seconds"
	KindProfiler         // profiler enabled / started / stopped
	KindWarning          // a WARNING/ERROR/CRITICAL line with no better class
	KindMemoryPool       // SGLang's "Memory pool end" and KV profiling lines: the KV cache stage, no figure
)

var kindNames = [...]string{"other", "version", "rank", "load_start", "shard_bar", "weights_read",
	"model_loaded", "compile", "compile_done", "kv_memory", "kv_cache", "kv_blocks", "concurrency",
	"graphs", "graphs_done", "engine_init", "ready", "failure", "watchdog", "profiler", "warning", "memory_pool"}

// String is the kind's short name ("load_start", "ready", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Failure kinds, as the parse command and the journal name them.
const (
	FailOOM          = "oom"
	FailNCCL         = "nccl"
	FailWorkerDied   = "worker_died"
	FailEngineFailed = "engine_failed"
	FailTimeout      = "timeout"
	FailDevice       = "device" // an accelerator fault: NPU/ACL, CUDA or HIP runtime error
	FailPortInUse    = "port_in_use"
	FailImport       = "import" // a module that would not import
	FailConfig       = "config" // an argument or model configuration refused
	// FailUnknown is an error the log shows without naming its kind
	// (an ERROR line, a traceback cut before its exception).
	FailUnknown = "unknown"
	// FailExited is the server process's exit during its load, which
	// the load watcher sees (no log line names it).
	FailExited = "exited"
)

// Bar is one tqdm progress update.
type Bar struct {
	Desc       string  `json:"desc"`
	Done       int     `json:"done"`
	Total      int     `json:"total"`
	Pct        int     `json:"pct"`
	ElapsedS   float64 `json:"elapsed_s"`   // -1 when "?"
	RemainingS float64 `json:"remaining_s"` // -1 when "?"
	SecPerIt   float64 `json:"s_per_it"`    // 0 when unknown
}

// Record is one recognised (or not) log line.
type Record struct {
	Kind    Kind
	Text    string // the cleaned line: prefix and header kept, wrappers and colour removed
	Msg     string // the message after prefix and header
	Proc    string // process name from the prefix, "" when none
	PID     int    // 0 when none
	Rank    int    // -1 when unknown
	Level   string // INFO, WARNING, ... ("" when no header)
	Bar     *Bar
	GiB     float64
	Seconds float64
	Tokens  int64
	Blocks  int64
	Value   float64
	Version string
	Failure string // FailOOM, ... for KindFailure
	// Strong is true for a failure that names its root cause (OOM, NCCL,
	// an explicit timeout) rather than its consequence (a worker died).
	Strong bool
	// Host is the Ray actor's address from its prefix ("ip=A.B.C.D").
	Host string
	// Time is the logger header's "HH:MM:SS", or the last one seen
	// before this line (uvicorn's own lines have none).
	Time string
	// Traceback is true for a line of a Python traceback (its head, a
	// frame, a code line, its exception line).
	Traceback bool
	// Frame is the function a traceback frame is in, or the method an
	// error line names ("Error executing method 'load_model'").
	Frame string
	// Exception is the exception type of a traceback's last line.
	Exception string
	// WeightsGiB is the weights' size a KV-memory line states beside
	// the KV cache's ("model weights take 7.51GiB; …"), 0 when none.
	WeightsGiB float64
	// Engine is the engine whose dialect read the line ("sglang"), ""
	// for vLLM's own.
	Engine string
	// File is the logger header's source file ("core.py"), "" when none.
	File string
	// Glued is another rank's process whose prefix was printed into
	// this line's (two workers writing at once): its name, pid and rank.
	GluedProc           string
	GluedPID, GluedRank int
	// Setup is what the line says of the deployment, nil when nothing.
	Setup *Setup
}

// Stage is the load stage this record proves was reached, "" when none.
func (r Record) Stage() string {
	switch r.Kind {
	case KindLoadStart, KindShardBar, KindWeightsRead:
		return phases.StageWeights
	case KindModelLoaded:
		return phases.StageWeights
	case KindCompile, KindCompileDone:
		return phases.StageCompile
	case KindKVMemory, KindKVCache, KindKVBlocks, KindConcurrency, KindMemoryPool:
		return phases.StageKVCache
	case KindGraphs, KindGraphsDone:
		return phases.StageCUDAGraphs
	}
	return ""
}

// Progress reports whether the record shows the load moving forward (for
// stall detection): noise, watchdog notices and warnings do not count.
func (r Record) Progress() bool {
	switch r.Kind {
	case KindOther, KindWatchdog, KindWarning, KindFailure, KindProfiler:
		return false
	}
	return true
}

// Relevant reports whether the line is worth showing to the operator among
// the last log lines (milestones, warnings, failures; not bars or noise).
func (r Record) Relevant() bool {
	switch r.Kind {
	case KindOther, KindShardBar, KindRankInfo:
		return false
	case KindGraphs:
		return r.Bar == nil
	}
	return true
}

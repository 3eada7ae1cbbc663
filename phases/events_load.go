package phases

// Load-phase event kinds: the server's weight loading, per GPU, and its lifecycle.
const (
	KindLoadGPU       = "load.gpu"        // one nvidia-smi poll (ephemeral; a coarse copy is journalled)
	KindLoadGPUCoarse = "load.gpu_coarse" // journalled every few seconds for the notebook timeline
	KindLoadLog       = "load.log"        // a relevant vLLM log line (ephemeral)
	KindLoadState     = "load.state"      // the load's progress (ephemeral; milestones are journalled)
	KindLoadMilestone = "load.milestone"  // weights → compile → KV cache → CUDA graphs → ready
	KindLoadStall     = "load.stall"
	KindLoadFailure   = "load.failure"
	KindLoadServer    = "load.server" // lifecycle: start, stop, restart, ready
)

// GPU is one GPU's reading. Pointers are nil when nvidia-smi said [N/A].
type GPU struct {
	Index          int      `json:"index"`
	Name           string   `json:"name,omitempty"`
	MemoryUsedMiB  *float64 `json:"memory_used_mib"`
	MemoryTotalMiB *float64 `json:"memory_total_mib"`
	UtilizationPct *float64 `json:"utilization_pct"`
	PowerW         *float64 `json:"power_w,omitempty"`
}

// GPUSample is one poll of all GPUs on a host.
type GPUSample struct {
	Host string `json:"host"`
	GPUs []GPU  `json:"gpus"`
}

// LogLine is one log line judged relevant (milestones, warnings, failures).
type LogLine struct {
	Rank  int    `json:"rank"` // -1 when unknown
	Level string `json:"level,omitempty"`
	Text  string `json:"text"`
	Msg   string `json:"msg,omitempty"`  // the message without process prefix and logger header
	Node  string `json:"node,omitempty"` // the node whose log it is (several nodes only)
}

// GPULoad is the load view of one GPU.
type GPULoad struct {
	Index       int     `json:"index"`
	Host        string  `json:"host,omitempty"` // the node the GPU is on
	UsedGiB     float64 `json:"used_gib"`
	ExpectedGiB float64 `json:"expected_gib,omitempty"`
	RateGiBMin  float64 `json:"rate_gib_per_min"`
	ETASeconds  float64 `json:"eta_s,omitempty"` // 0 when unknown
	Known       bool    `json:"known"`           // false when nvidia-smi said [N/A]
	TotalGiB    float64 `json:"total_gib,omitempty"`
	Name        string  `json:"name,omitempty"`
	UtilPct     float64 `json:"util_pct,omitempty"`
	UtilKnown   bool    `json:"util_known,omitempty"`
	PowerW      float64 `json:"power_w,omitempty"` // board power; 0 when unknown
	// ExpectFrom says where ExpectedGiB came from: "campaign" (model or
	// --expect-gib), "log" (Model loading took), "plateau" (memory stopped
	// growing); empty when unknown.
	ExpectFrom string `json:"expect_from,omitempty"`
}

// LoadState is the whole load's progress.
type LoadState struct {
	Host        string    `json:"host"`
	GPUs        []GPULoad `json:"gpus"`
	ShardsDone  int       `json:"shards_done"`
	ShardsTotal int       `json:"shards_total"`
	ShardETA    float64   `json:"shard_eta_s,omitempty"`
	Stage       string    `json:"stage"` // "starting","weights","compile","kv_cache","cuda_graphs","ready","failed","stopped"
	VLLM        string    `json:"vllm_version,omitempty"`
	// Engine is the engine the log shows ("vllm", "sglang"), "" before
	// any line was read.
	Engine   string  `json:"engine,omitempty"`
	ElapsedS float64 `json:"elapsed_s"`
	// ShardSecPerIt is the bar's current seconds per shard (0 when unknown).
	ShardSecPerIt float64 `json:"shard_s_per_it,omitempty"`
	// WeightsGiB is the largest per-rank "Model loading took" (0 until known).
	WeightsGiB    float64 `json:"weights_gib,omitempty"`
	KVCacheTokens int64   `json:"kv_cache_tokens,omitempty"`
	// IdleS is how long nothing moved (no memory growth, no log progress).
	IdleS   float64      `json:"idle_s"`
	Stall   *Stall       `json:"stall,omitempty"`
	Failure *LoadFailure `json:"failure,omitempty"`
	Ready   bool         `json:"ready"` // GET /health answered 200
	// Load numbers the loads a watcher saw: it grows when a new load
	// begins (a restart, a replaced log), so views can start over.
	Load int `json:"load"`
}

// Milestone marks a stage reached (with the evidence line when there is one).
type Milestone struct {
	Stage string  `json:"stage"`
	AtS   float64 `json:"at_s"`
	Line  string  `json:"line,omitempty"`
	Value string  `json:"value,omitempty"` // e.g. "89.4 GiB", "1,234,567 tokens"
	Load  int     `json:"load,omitempty"`  // LoadState.Load of the load it belongs to
	Node  string  `json:"node,omitempty"`  // the node it happened on (several nodes only)
}

// Stall says loading stopped making progress.
type Stall struct {
	GPUs      []int     `json:"gpus"`
	MemoryGiB []float64 `json:"memory_gib"`
	ForS      float64   `json:"for_s"`
	Line      string    `json:"line,omitempty"` // last log line seen
	Node      string    `json:"node,omitempty"` // the node that stalled (several nodes only)
	// Waits is what the log itself said about waiting, in words ("3
	// shared-memory broadcast waits of 60 s, the last at 10:40:02").
	Waits string `json:"waits,omitempty"`
}

// LoadFailure is a failure named from the log, or the server process's
// exit during its load (kind "exited").
type LoadFailure struct {
	Kind string `json:"kind"` // "oom","nccl","worker_died","engine_failed","timeout","device","unknown","exited"
	Line string `json:"line"`
	Rank int    `json:"rank"`
	// When is "startup" or "serving" (a run-time failure after ready),
	// "" when the log does not say; Component the part that failed
	// ("loader", "worker", "engine_core", "api_server", SGLang's
	// "scheduler", ...), "" when it does not say.
	When      string `json:"when,omitempty"`
	Component string `json:"component,omitempty"`
	Node      string `json:"node,omitempty"` // the node that failed (several nodes only)
	// PID and Tail, for an exit: the launch's pid and the log's last
	// lines (secrets scrubbed), the last one being Line.
	PID  int      `json:"pid,omitempty"`
	Tail []string `json:"tail,omitempty"`
}

// ServerEvent is a lifecycle step of the serving process.
type ServerEvent struct {
	Action string `json:"action"` // "start","stop","restart","ready","stopped","exited","node_lost","node_back"
	Detail string `json:"detail,omitempty"`
	Node   string `json:"node,omitempty"` // the node it concerns (several nodes only)
}

func init() {
	Register(KindLoadGPU, Load, GPUSample{}, true)
	Register(KindLoadGPUCoarse, Load, GPUSample{}, false)
	Register(KindLoadLog, Load, LogLine{}, true)
	Register(KindLoadState, Load, LoadState{}, true)
	Register(KindLoadMilestone, Load, Milestone{}, false)
	Register(KindLoadStall, Load, Stall{}, false)
	Register(KindLoadFailure, Load, LoadFailure{}, false)
	Register(KindLoadServer, Load, ServerEvent{}, false)
}

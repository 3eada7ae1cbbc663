package phases

// Micro (GEMM) and NCCL event kinds.
const (
	KindMicroEnv      = "micro.env"
	KindMicroGEMM     = "micro.gemm"
	KindMicroStep     = "micro.step"
	KindMicroProgress = "micro.progress" // ephemeral
	KindMicroCalib    = "micro.calib"
	KindMicroError    = "micro.error"
	KindNCCLEnv       = "nccl.env"
	KindNCCLBurst     = "nccl.burst"
	KindNCCLAllToAll  = "nccl.alltoall"
	KindNCCLCliff     = "nccl.cliff"
	KindNCCLProgress  = "nccl.progress" // ephemeral
	KindNCCLError     = "nccl.error"
	KindNCCLNone      = "nccl.none"    // one GPU: the step has no collectives, nothing to time
	KindNCCLWarning   = "nccl.warning" // a figure left out, and why
)

// GPUEnv is what a benchmark script reports about where it ran.
type GPUEnv struct {
	GPU   string `json:"gpu"`
	Torch string `json:"torch"`
	CUDA  string `json:"cuda"`
	NProc int    `json:"nproc,omitempty"`

	SMs        int               `json:"sms,omitempty"`
	MemGiB     float64           `json:"mem_gib,omitempty"`
	PeakGBs    float64           `json:"peak_gbs,omitempty"`    // datasheet HBM bandwidth
	PeakTFLOPs float64           `json:"peak_tflops,omitempty"` // datasheet dense BF16
	CopyGBs    float64           `json:"copy_gbs,omitempty"`    // measured device-to-device copy (read + write)
	NCCL       string            `json:"nccl,omitempty"`
	NCCLEnv    map[string]string `json:"nccl_env,omitempty"`
	// EngineMoE is how the micro script times routed experts served
	// quantized: the engine's fused-MoE entry point it imported, or why
	// it could not (they are then timed in BF16, an upper bound).
	EngineMoE string `json:"engine_moe,omitempty"`
	// EngineLinear is how it times the other GEMMs served quantized (a
	// dense MLP, attention projections, shared experts): the engine's
	// quantized linear layer it builds, or why it could not (they are then
	// timed in BF16, an upper bound). Empty for a model served in BF16.
	EngineLinear string `json:"engine_linear,omitempty"`
}

// GEMMResult is one timed GEMM.
type GEMMResult struct {
	Name   string `json:"name"`
	Step   int    `json:"step_m"` // the decode batch size
	M      int    `json:"m"`
	N      int    `json:"n"`
	K      int    `json:"k"`
	Dtype  string `json:"dtype"`
	Batch  int    `json:"batch,omitempty"`  // products in one batched GEMM
	Served string `json:"served,omitempty"` // the weight's dtype when served, if not BF16
	// AsServed says the GEMM was timed in its served format with the
	// engine's own kernel (not an upper bound).
	AsServed bool    `json:"as_served,omitempty"`
	PerStep  int     `json:"per_step"`
	Us       float64 `json:"us"` // median
	P20Us    float64 `json:"p20_us,omitempty"`
	P80Us    float64 `json:"p80_us,omitempty"`
	Reps     int     `json:"reps,omitempty"`
	TFLOPs   float64 `json:"tflops"`
	GBs      float64 `json:"gbs"`
	BWPct    float64 `json:"bw_pct"`
	StepUs   float64 `json:"step_us"` // Us × PerStep
	// Kernel is the kind of product timed: mm, bmm, or grouped_mm (routed
	// experts as one grouped GEMM over their token segments, as MoE engines
	// run them, where PyTorch has it).
	Kernel string `json:"kernel,omitempty"`
}

// GEMMStep is the whole decode step's GEMMs at one M.
type GEMMStep struct {
	M            int     `json:"m"`
	SumUs        float64 `json:"sum_us"`          // Σ us×per_step of individually timed GEMMs
	BackToBackUs float64 `json:"back_to_back_us"` // the step's GEMMs run back-to-back, measured
	Graph        bool    `json:"graph,omitempty"` // back-to-back was a CUDA graph replay
}

// Calib is the script's timing checked against triton.testing.do_bench on
// one large GEMM.
type Calib struct {
	Name          string  `json:"name"`
	Us            float64 `json:"us"`
	TFLOPs        float64 `json:"tflops"`
	Reps          int     `json:"reps,omitempty"`
	Rounds        int     `json:"rounds,omitempty"` // alternating rounds of each; figures are medians
	PeakPct       float64 `json:"peak_pct,omitempty"`
	DoBenchUs     float64 `json:"do_bench_us,omitempty"`
	DoBenchTFLOPs float64 `json:"do_bench_tflops,omitempty"`
	DoBenchError  string  `json:"do_bench_error,omitempty"`
}

// ScriptError is a failure a benchmark script reported (one GEMM that did not
// run, a dead script); results before it are kept.
type ScriptError struct {
	Name  string `json:"name,omitempty"`   // the GEMM or step part that failed
	What  string `json:"what,omitempty"`   // what was being done
	Step  int    `json:"step_m,omitempty"` // the decode batch size, when known
	Err   string `json:"error"`
	Fatal bool   `json:"fatal,omitempty"` // the script stopped
}

// Progress is a running script's progress line.
type Progress struct {
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Text  string `json:"text,omitempty"`
}

// NCCLBurst is one decode step's all-reduces at one M.
type NCCLBurst struct {
	M       int     `json:"m"`
	Count   int     `json:"count"`
	Bytes   int64   `json:"bytes"` // per all-reduce
	TotalMs float64 `json:"total_ms"`
	PerOpUs float64 `json:"per_op_us"`
	NProc   int     `json:"nproc"`
	// The same burst captured in a CUDA graph and replayed (as vLLM decodes).
	GraphMs      float64 `json:"graph_ms,omitempty"`
	GraphPerOpUs float64 `json:"graph_per_op_us,omitempty"`
	// The same all-reduces in the step: each after a GEMM whose weights
	// evict L2, captured in a graph, less the GEMMs alone.
	InStepMs      float64 `json:"in_step_ms,omitempty"`
	InStepPerOpUs float64 `json:"in_step_per_op_us,omitempty"`
}

// NCCLNone says the deployment's decode step has no collectives (one GPU,
// TP 1): the NCCL phase has nothing to time and the budget's communication
// part is zero, measured as such rather than missing.
type NCCLNone struct {
	TP     int    `json:"tp"`
	NProc  int    `json:"nproc"`
	Reason string `json:"reason"`
}

// NCCLWarning says why the NCCL script left a figure out (the burst
// between GEMMs not slower than the GEMMs alone, a capture not tried
// after a failure, one rank): M or Tokens name the size it is about
// (0: every size).
type NCCLWarning struct {
	M      int    `json:"m,omitempty"`
	Tokens int    `json:"tokens_per_gpu,omitempty"`
	Text   string `json:"text"`
}

// NCCLAllToAll is one All-to-All size.
type NCCLAllToAll struct {
	Tokens int     `json:"tokens_per_gpu"`
	Bytes  int64   `json:"bytes"`
	Us     float64 `json:"us"`
	AlgBW  float64 `json:"algbw_gbs"`
	BusBW  float64 `json:"busbw_gbs"`
	NProc  int     `json:"nproc"`
	// Nodes is how many nodes the ranks span; OffNodeBytes how much of a
	// rank's Bytes goes to ranks on other nodes (0 on one node).
	Nodes        int   `json:"nodes,omitempty"`
	OffNodeBytes int64 `json:"off_node_bytes,omitempty"`
}

// NCCLCliff names the first T where All-to-All latency grows more than 2×.
type NCCLCliff struct {
	Tokens int     `json:"tokens_per_gpu"`
	FromUs float64 `json:"from_us"`
	ToUs   float64 `json:"to_us"`
}

func init() {
	Register(KindMicroEnv, Micro, GPUEnv{}, false)
	Register(KindMicroGEMM, Micro, GEMMResult{}, false)
	Register(KindMicroStep, Micro, GEMMStep{}, false)
	Register(KindMicroProgress, Micro, Progress{}, true)
	Register(KindMicroCalib, Micro, Calib{}, false)
	Register(KindMicroError, Micro, ScriptError{}, false)
	Register(KindNCCLEnv, NCCL, GPUEnv{}, false)
	Register(KindNCCLBurst, NCCL, NCCLBurst{}, false)
	Register(KindNCCLAllToAll, NCCL, NCCLAllToAll{}, false)
	Register(KindNCCLCliff, NCCL, NCCLCliff{}, false)
	Register(KindNCCLProgress, NCCL, Progress{}, true)
	Register(KindNCCLError, NCCL, ScriptError{}, false)
	Register(KindNCCLNone, NCCL, NCCLNone{}, false)
	Register(KindNCCLWarning, NCCL, NCCLWarning{}, false)
}

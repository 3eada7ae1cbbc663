package phases

// Micro (GEMM) and NCCL event kinds.
const (
	KindMicroEnv      = "micro.env"
	KindMicroResult   = "micro.gemm"
	KindMicroStep     = "micro.step"
	KindMicroProgress = "micro.progress" // ephemeral
	KindNCCLEnv       = "nccl.env"
	KindNCCLBurst     = "nccl.burst"
	KindNCCLAllToAll  = "nccl.alltoall"
	KindNCCLCliff     = "nccl.cliff"
	KindNCCLProgress  = "nccl.progress" // ephemeral
)

// GPUEnv is what a benchmark script reports about where it ran.
type GPUEnv struct {
	GPU   string `json:"gpu"`
	Torch string `json:"torch"`
	CUDA  string `json:"cuda"`
	NProc int    `json:"nproc,omitempty"`
}

// GEMMResult is one timed GEMM.
type GEMMResult struct {
	Name    string  `json:"name"`
	M       int     `json:"m"`
	N       int     `json:"n"`
	K       int     `json:"k"`
	Dtype   string  `json:"dtype"`
	PerStep int     `json:"per_step"`
	Us      float64 `json:"us"`
	TFLOPs  float64 `json:"tflops"`
	GBs     float64 `json:"gbs"`
	BWPct   float64 `json:"bw_pct"`
	StepUs  float64 `json:"step_us"` // Us × PerStep
}

// GEMMStep is the whole decode step's GEMMs at one M.
type GEMMStep struct {
	M            int     `json:"m"`
	SumUs        float64 `json:"sum_us"`          // Σ us×per_step of individually timed GEMMs
	BackToBackUs float64 `json:"back_to_back_us"` // the step's GEMMs run back-to-back, measured
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
}

// NCCLAllToAll is one All-to-All size.
type NCCLAllToAll struct {
	Tokens int     `json:"tokens_per_gpu"`
	Bytes  int64   `json:"bytes"`
	Us     float64 `json:"us"`
	AlgBW  float64 `json:"algbw_gbs"`
	BusBW  float64 `json:"busbw_gbs"`
	NProc  int     `json:"nproc"`
}

// NCCLCliff names the first T where All-to-All latency grows more than 2×.
type NCCLCliff struct {
	Tokens int     `json:"tokens_per_gpu"`
	FromUs float64 `json:"from_us"`
	ToUs   float64 `json:"to_us"`
}

func init() {
	Register(KindMicroEnv, Micro, GPUEnv{}, false)
	Register(KindMicroResult, Micro, GEMMResult{}, false)
	Register(KindMicroStep, Micro, GEMMStep{}, false)
	Register(KindMicroProgress, Micro, Progress{}, true)
	Register(KindNCCLEnv, NCCL, GPUEnv{}, false)
	Register(KindNCCLBurst, NCCL, NCCLBurst{}, false)
	Register(KindNCCLAllToAll, NCCL, NCCLAllToAll{}, false)
	Register(KindNCCLCliff, NCCL, NCCLCliff{}, false)
	Register(KindNCCLProgress, NCCL, Progress{}, true)
}

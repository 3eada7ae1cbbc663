package vllmlog

import "strings"

// Deployment is what the log says of the deployment, each field nil when
// it does not say: never guessed from the model or the hardware.
type Deployment struct {
	// Platform is "cuda", "rocm", "npu" (Ascend), "tpu", "xpu", "cpu",
	// "hpu" or "neuron".
	Platform      *string `json:"platform"`
	DriverVersion *string `json:"driver_version"`
	CUDAVersion   *string `json:"cuda_version"`
	ROCmVersion   *string `json:"rocm_version"`
	// Quantization is the method a config or args line names ("fp8",
	// "awq_marlin", "compressed-tensors", "bitsandbytes").
	Quantization *string `json:"quantization"`
	// CompileSeconds is torch.compile's (or XLA's) total, the slowest
	// rank's.
	CompileSeconds *float64 `json:"compile_seconds"`
	TP             *int     `json:"tp"`
	PP             *int     `json:"pp"`
	DP             *int     `json:"dp"`
	EP             *int     `json:"ep"`
	// DPAttention is SGLang's data-parallel attention.
	DPAttention *bool `json:"dp_attention"`
	// CUDAGraphs is false when the log says graphs are off (SGLang's
	// disable_cuda_graph=True, vLLM's enforce_eager=True).
	CUDAGraphs *bool `json:"cuda_graphs"`
	// PDRole is the server's role in prefill/decode disaggregation
	// ("prefill", "decode").
	PDRole *string `json:"pd_role"`
}

// merge folds what one line said into what the log said so far: a named
// platform over one read from an error, the first statement otherwise.
func (s *Setup) merge(o *Setup) {
	if o.Platform != "" && (s.Platform == "" || o.PlatformSure && !s.PlatformSure) {
		s.Platform, s.PlatformSure = o.Platform, o.PlatformSure
	}
	first(&s.Driver, o.Driver)
	if !o.Built {
		// A runtime's version over the one torch was built with.
		if o.CUDA != "" && s.cudaBuilt {
			s.CUDA, s.cudaBuilt = "", false
		}
		if o.ROCm != "" && s.rocmBuilt {
			s.ROCm, s.rocmBuilt = "", false
		}
	}
	if s.CUDA == "" && o.CUDA != "" {
		s.CUDA, s.cudaBuilt = o.CUDA, o.Built
	}
	if s.ROCm == "" && o.ROCm != "" {
		s.ROCm, s.rocmBuilt = o.ROCm, o.Built
	}
	first(&s.Quantization, o.Quantization)
	firstInt(&s.TP, o.TP)
	firstInt(&s.PP, o.PP)
	firstInt(&s.DP, o.DP)
	firstInt(&s.EP, o.EP)
	if o.DPAttention != 0 {
		s.DPAttention = o.DPAttention
	}
	if o.CUDAGraphs != 0 {
		s.CUDAGraphs = o.CUDAGraphs
	}
	first(&s.PDRole, o.PDRole)
}

func first(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func firstInt(dst *int, v int) {
	if *dst == 0 {
		*dst = v
	}
}

// finishDeployment exports the merged setup and dates the failure.
func (s *Summary) finishDeployment() {
	st := s.setup
	s.Platform = strPtr(st.Platform)
	s.DriverVersion = strPtr(st.Driver)
	s.CUDAVersion = strPtr(st.CUDA)
	s.ROCmVersion = strPtr(st.ROCm)
	s.Quantization = strPtr(st.Quantization)
	s.TP, s.PP, s.DP, s.EP = intPtr(st.TP), intPtr(st.PP), intPtr(st.DP), intPtr(st.EP)
	s.DPAttention = boolPtr(st.DPAttention)
	s.CUDAGraphs = boolPtr(st.CUDAGraphs)
	s.PDRole = strPtr(st.PDRole)
	if s.Failure == nil {
		return
	}
	if s.Failure.Component == "" {
		s.Failure.Component = s.tbComp
	}
	switch {
	case s.failedReady || s.servingEv:
		s.Failure.When = WhenServing
	case s.startupEv || s.tbStage >= 0 || s.stage > 0 || s.loaded:
		s.Failure.When = WhenStartup
	default:
		s.Failure.When = ""
	}
}

// When a failure came.
const (
	WhenStartup = "startup"
	WhenServing = "serving"
)

func strPtr(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func intPtr(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func boolPtr(v int8) *bool {
	if v == 0 {
		return nil
	}
	b := v > 0
	return &b
}

// servingFrames are functions a failing traceback passes through only
// while the server serves: an engine step, a request's handler.
var servingFrames = map[string]bool{
	"run_busy_loop": true, "_process_engine_step": true, "step": true, "output_handler": true,
	"chat_completion_stream_generator": true, "completion_stream_generator": true, "create_chat_completion": true,
	"run_engine_loop": true, "engine_step": true, "event_loop_normal": true, "event_loop_overlap": true,
	"event_loop_pp": true, "process_batch_result": true, "run_batch": true, "transfer_worker": true,
	"execute_model_async": true, "generate": true, "_run_output_handler": true,
	// SGLang's batch steps (its model worker's thread, the 2024 router's RPC).
	"forward_thread_func": true, "forward_thread_func_": true, "forward_batch_generation": true,
	"forward_step": true, "exposed_step": true, "forward_fill_batch": true,
}

// startupFrames are functions a failing traceback passes through only
// while the server starts.
var startupFrames = map[string]bool{
	"__init__": true, "wait_for_ready": true, "wait_for_engine_startup": true, "_init_executor": true,
	"init_model_worker": true, "init_tp_model_worker": true, "initialize": true, "check_ready": true,
	"initialize_and_get_metadata": true, "build_async_engine_client": true, "from_engine_args": true,
	"run_mp_engine": true, "_initialize_kv_caches": true, "make_arg_parser": true,
	// A program's module-level code: it runs before anything serves.
	"<module>": true,
}

// servingMsgs and startupMsgs are error messages that say when.
var (
	servingMsgs = []string{"EngineCore encountered a fatal error", "Error in chat completion", "Error in completion stream",
		"Dumping scheduler stats", "Dumping input data", "AsyncLLM output_handler failed", "Unexpected transfer worker error",
		"EngineDeadError", "Engine loop has died"}
	startupMsgs = []string{"failed to start", "Failed to start", "initialization failed", "creation task",
		"Exception in Replica", "failed to initialize", "Failed to initialize"}
)

// noteWhen notes what a failing line says of when the failure came.
func (s *Summary) noteWhen(r Record) {
	if r.Frame != "" {
		switch {
		case servingFrames[r.Frame]:
			s.servingEv = true
		case startupFrames[r.Frame]:
			s.startupEv = true
		}
	}
	if containsAny(r.Msg, servingMsgs) {
		s.servingEv = true
	} else if containsAny(r.Msg, startupMsgs) {
		s.startupEv = true
	}
}

// componentOf names the part a failing line blames: the one its message
// names, else the process that printed it, else its logger's file.
func componentOf(r Record) string {
	msg := r.Msg
	switch {
	case strings.Contains(msg, "Producer batch") || strings.Contains(msg, "Consumer error") ||
		strings.Contains(msg, "weights_iterator") || strings.Contains(msg, "fastsafetensors"):
		return CompLoader
	case strings.Contains(msg, "Scheduler hit an exception"):
		return "scheduler"
	case strings.Contains(msg, "DetokenizerManager hit"):
		return "detokenizer"
	case strings.Contains(msg, "TokenizerManager hit"):
		return "tokenizer_manager"
	case strings.Contains(msg, "DataParallelController hit"):
		return "dp_controller"
	case containsAny(msg, []string{"EngineDead", "EngineCore", "Engine core", "engine core", "MQLLMEngine", "Engine process", "Engine loop", "engine loop"}):
		return CompEngineCore
	case containsAny(msg, []string{"WorkerProc", "Worker proc", "Exception in worker", "RayWorkerWrapper died", "Worker VllmWorkerProcess"}):
		return CompWorker
	}
	if c := procComponent(r.Proc); c != "" {
		return c
	}
	return fileComponent(r.File)
}

// Failing components.
const (
	CompLoader     = "loader"
	CompWorker     = "worker"
	CompEngineCore = "engine_core"
	CompAPIServer  = "api_server"
)

func procComponent(name string) string {
	switch {
	case name == "":
		return ""
	case isWorker(name) || strings.HasPrefix(name, "RayWorker"):
		return CompWorker
	case strings.HasPrefix(name, "EngineCore") || strings.HasPrefix(name, "MQLLMEngine"):
		return CompEngineCore
	case strings.HasPrefix(name, "APIServer") || strings.HasPrefix(name, "ApiServer"):
		return CompAPIServer
	}
	return ""
}

func fileComponent(file string) string {
	switch {
	case file == "":
		return ""
	case strings.HasPrefix(file, "multiproc_worker_utils") || strings.HasPrefix(file, "worker_base") ||
		strings.HasPrefix(file, "gpu_worker") || strings.HasPrefix(file, "worker.py"):
		return CompWorker
	case strings.HasPrefix(file, "engine.py") || strings.HasPrefix(file, "core.py") || strings.HasPrefix(file, "llm_engine"):
		return CompEngineCore
	case strings.HasPrefix(file, "api_server") || strings.HasPrefix(file, "serving_"):
		return CompAPIServer
	case strings.HasPrefix(file, "weight_utils") || strings.HasPrefix(file, "default_loader") || strings.HasPrefix(file, "loader.py"):
		return CompLoader
	}
	return ""
}

// frameComponent names the part a traceback frame's file belongs to.
func frameComponent(msg string) string {
	switch {
	case strings.Contains(msg, "/entrypoints/") || strings.Contains(msg, "/__main__.py\"") || strings.Contains(msg, "/api_server.py\""):
		// The server's own entry point (vLLM's, or the one a platform
		// such as KServe wraps it in).
		return CompAPIServer
	case strings.Contains(msg, "/model_loader/") || strings.Contains(msg, "weight_utils.py"):
		return CompLoader
	case strings.Contains(msg, "/v1/engine/core.py") || strings.Contains(msg, "/engine/multiprocessing/engine.py"):
		return CompEngineCore
	case strings.Contains(msg, "/worker/") || strings.Contains(msg, "/executor/"):
		return CompWorker
	}
	return ""
}

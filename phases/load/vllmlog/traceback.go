package vllmlog

import (
	"regexp"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// A Python traceback is read by its structure: its head, its frames ("File
// "…", line N, in FUNC") and its last line, the exception. A traceback that
// a vLLM process prints at ERROR level, or on its prefixed stderr, ends
// that process; its frames say where the load was (load_model is the
// weights, capture_model the CUDA graphs), and its exception, when the text
// has it, says what went wrong.

var (
	frameRe = regexp.MustCompile(`^File "[^"]*", line \d+, in (<?[\w.]+>?)`)
	// The exception line: "OSError: [Errno 98] …", "torch.OutOfMemoryError: …", "Exception: …".
	exceptionRe = regexp.MustCompile(`^(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)|Exception)(?:\([\w.]+\))?(?::\s|$)`)
	// A method an error line names.
	qualifiedExcRe = regexp.MustCompile(`^(?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception)(?:\([\w.]+\))?: `)
	methodRe       = regexp.MustCompile(`(?:Error executing method '?|while processing method )(\w+)`)
)

// frameStages maps a frame's (or a named method's) function to the stage
// it belongs to; the innermost frame that maps decides.
var frameStages = map[string]string{
	"load_model": phases.StageWeights, "load_weights": phases.StageWeights, "get_model": phases.StageWeights,
	"download_weights_from_hf": phases.StageWeights, "_prepare_weights": phases.StageWeights,
	"safetensors_weights_iterator": phases.StageWeights, "fastsafetensors_weights_iterator": phases.StageWeights,
	"runai_safetensors_weights_iterator": phases.StageWeights, "gguf_quant_weights_iterator": phases.StageWeights,
	"determine_available_memory": phases.StageKVCache, "determine_num_available_blocks": phases.StageKVCache,
	"profile_run": phases.StageKVCache, "initialize_kv_cache": phases.StageKVCache, "_initialize_kv_caches": phases.StageKVCache,
	"initialize_cache": phases.StageKVCache, "_allocate_kv_cache": phases.StageKVCache, "_allocate_kv_cache_tensors": phases.StageKVCache,
	"initialize_kv_cache_tensors": phases.StageKVCache, "get_kv_cache_config": phases.StageKVCache,
	"compile_or_warm_up_model": phases.StageCUDAGraphs, "capture_model": phases.StageCUDAGraphs, "capture": phases.StageCUDAGraphs,
	"capture_end": phases.StageCUDAGraphs, "_capture_cudagraphs": phases.StageCUDAGraphs, "capture_graph": phases.StageCUDAGraphs,
	"init_device": phases.StageStarting, "init_worker_distributed_environment": phases.StageStarting,
	"initialize_model_parallel": phases.StageStarting,
	// SGLang's model runner.
	"init_torch_distributed": phases.StageStarting, "load_weights_and_postprocess": phases.StageWeights,
	"init_memory_pool": phases.StageKVCache, "profile_max_num_token": phases.StageKVCache,
	"init_cuda_graphs": phases.StageCUDAGraphs, "init_device_graphs": phases.StageCUDAGraphs, "capture_one_batch_size": phases.StageCUDAGraphs,
}

// calledStage is the stage a traceback's code line calls into
// ("self.load_model()"), "" when it calls none.
func calledStage(r Record) string {
	if !r.Traceback || r.Frame != "" || r.Exception != "" || !strings.Contains(r.Msg, "(") {
		return ""
	}
	for _, m := range callRe.FindAllStringSubmatch(r.Msg, 8) {
		if st := frameStages[m[1]]; st != "" {
			return st
		}
	}
	return ""
}

var callRe = regexp.MustCompile(`(\w+)\(`)

// FrameStage is the stage a traceback frame's function (or a named
// method) belongs to, "" when it says nothing about the stage.
func FrameStage(fn string) string { return frameStages[fn] }

// readTraceback marks r as a traceback line when its message is one, and
// fills its frame or exception.
func readTraceback(r *Record, raw string, inTraceback bool) {
	t := strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(t, "Traceback (most recent call last)"):
		r.Traceback = true
	case strings.HasPrefix(t, "File \""):
		r.Traceback = true
		if m := frameRe.FindStringSubmatch(t); m != nil {
			r.Frame = m[1]
		}
	case inTraceback && !strings.HasPrefix(raw, " "):
		if m := exceptionRe.FindStringSubmatch(t); m != nil {
			r.Traceback, r.Exception = true, m[1]
		}
	case inTraceback:
		// A code line or caret marker, indented.
		r.Traceback = true
	case qualifiedExcRe.MatchString(t):
		// A fully qualified exception on its own line, its traceback
		// not kept (a console's export, a quoted error).
		if m := exceptionRe.FindStringSubmatch(t); m != nil {
			r.Traceback, r.Exception = true, m[1]
		}
	}
	if r.Frame == "" {
		if m := methodRe.FindStringSubmatch(t); m != nil {
			r.Frame = m[1]
		}
	}
}

// exceptionKind names the failure a traceback's exception shows when the
// message itself names none.
func exceptionKind(exc, msg string) (string, bool) {
	switch {
	case strings.Contains(exc, "OutOfMemory"):
		return FailOOM, true
	case exc == "ImportError" || exc == "ModuleNotFoundError":
		return FailImport, true
	case exc == "ValidationError" || strings.Contains(msg, "is not supported") || strings.Contains(msg, "not supported for") ||
		strings.Contains(msg, "must be divisible by") || strings.Contains(msg, "exceeds the") && strings.Contains(msg, "max"):
		return FailConfig, true
	case exc == "DistBackendError" || exc == "DistNetworkError":
		return FailNCCL, true
	case exc == "EngineDeadError":
		return FailEngineFailed, false
	}
	return "", false
}

// isWorkerProc reports whether a process name is a worker (its death is a
// worker's), as opposed to an engine core or the API server.
func isWorkerProc(name string) bool {
	return strings.HasPrefix(name, "Worker") || strings.HasPrefix(name, "VllmWorker") || strings.HasPrefix(name, "RayWorker")
}

package vllmlog

import (
	"regexp"
	"strings"
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
	exceptionRe = regexp.MustCompile(`^(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)|Exception)(?::\s|$)`)
	// A method an error line names.
	methodRe = regexp.MustCompile(`(?:Error executing method '?|while processing method )(\w+)`)
)

// frameStages maps a frame's (or a named method's) function to the stage
// it belongs to; the innermost frame that maps decides.
var frameStages = map[string]string{
	"load_model": StageWeights, "load_weights": StageWeights, "get_model": StageWeights,
	"download_weights_from_hf": StageWeights, "_prepare_weights": StageWeights,
	"safetensors_weights_iterator": StageWeights, "fastsafetensors_weights_iterator": StageWeights,
	"runai_safetensors_weights_iterator": StageWeights, "gguf_quant_weights_iterator": StageWeights,
	"determine_available_memory": StageKVCache, "determine_num_available_blocks": StageKVCache,
	"profile_run": StageKVCache, "initialize_kv_cache": StageKVCache, "_initialize_kv_caches": StageKVCache,
	"initialize_cache": StageKVCache, "_allocate_kv_cache": StageKVCache, "_allocate_kv_cache_tensors": StageKVCache,
	"initialize_kv_cache_tensors": StageKVCache, "get_kv_cache_config": StageKVCache,
	"compile_or_warm_up_model": StageCUDAGraphs, "capture_model": StageCUDAGraphs, "capture": StageCUDAGraphs,
	"capture_end": StageCUDAGraphs, "_capture_cudagraphs": StageCUDAGraphs, "capture_graph": StageCUDAGraphs,
	"init_device": StageStarting, "init_worker_distributed_environment": StageStarting,
	"initialize_model_parallel": StageStarting,
	// SGLang's model runner.
	"init_torch_distributed": StageStarting, "load_weights_and_postprocess": StageWeights,
	"init_memory_pool": StageKVCache, "profile_max_num_token": StageKVCache,
	"init_cuda_graphs": StageCUDAGraphs, "init_device_graphs": StageCUDAGraphs, "capture_one_batch_size": StageCUDAGraphs,
}

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

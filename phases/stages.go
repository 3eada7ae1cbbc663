package phases

import "strings"

// The stages of a server's load (LoadState.Stage), in the words the
// engine, the simulator, the panes and the notebook all use.
const (
	StageStarting   = "starting"
	StageWeights    = "weights"
	StageCompile    = "compile"
	StageKVCache    = "kv_cache"
	StageCUDAGraphs = "cuda_graphs"
	StageReady      = "ready"
	// A load ends in one of these instead of StageReady.
	StageFailed  = "failed"
	StageStopped = "stopped"
)

// StageOrder lists the stages a load goes through, in order.
var StageOrder = []string{StageStarting, StageWeights, StageCompile, StageKVCache, StageCUDAGraphs, StageReady}

// StageIndex is the position of stage in StageOrder, -1 when unknown.
func StageIndex(stage string) int {
	for i, s := range StageOrder {
		if s == stage {
			return i
		}
	}
	return -1
}

// StageLabel is a stage's (or a milestone's) name for people: "KV cache",
// "CUDA graphs done", "vLLM version"; other underscores become spaces.
func StageLabel(stage string) string {
	text := strings.ReplaceAll(stage, "_", " ")
	text = strings.Replace(text, "kv cache", "KV cache", 1)
	text = strings.Replace(text, "vllm ", "vLLM ", 1)
	return strings.Replace(text, "cuda graphs", "CUDA graphs", 1)
}

// PastWeights reports whether a load has its weights in and takes the rest
// of the memory (KV cache, CUDA graphs), or has ended (failed, stopped):
// its GPU bars then show the whole GPU.
func PastWeights(stage string) bool {
	return StageIndex(stage) > StageIndex(StageWeights) || stage == StageFailed || stage == StageStopped
}

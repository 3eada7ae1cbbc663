package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// The micro section says how the weights served quantized were timed: the
// engine's layers for some, BF16 and why for the others; a model with no
// such weights says neither.
func TestNotebookSaysHowServedWeightsWereTimed(t *testing.T) {
	env := phases.GPUEnv{GPU: "NVIDIA H200", EngineMoE: "vLLM is not importable by this Python (No module named 'vllm'): quantized experts are timed in BF16, an upper bound",
		EngineLinear: "vllm 0.11.0 ReplicatedLinear with CompressedTensorsConfig"}
	render := func(gemms ...phases.GEMMResult) string {
		kv := []any{phases.KindMicroEnv, env}
		for _, g := range gemms {
			kv = append(kv, phases.KindMicroGEMM, g)
		}
		n := &nb{}
		n.microRun(&phaseRun{events: budgetEvents(kv...)})
		return n.b.String()
	}
	md := render(phases.GEMMResult{Name: "dense.down", Step: 1, M: 1, Dtype: "int4", Served: "int4", AsServed: true},
		phases.GEMMResult{Name: "experts.w13", Step: 1, M: 1, Batch: 8, Dtype: "bf16", Served: "int4"})
	for _, w := range []string{"Routed experts served quantized: vLLM is not importable by this Python (No module named 'vllm'): quantized experts are timed in BF16, an upper bound.",
		"Other layers served quantized: vllm 0.11.0 ReplicatedLinear with CompressedTensorsConfig.",
		"| dense.down | 1 | 1 | 0 | 0 | int4 (as served, the engine's kernel) |", "| experts.w13 ×8 | 1 | 1 | 0 | 0 | bf16 (served int4) |"} {
		if !strings.Contains(md, w) {
			t.Errorf("notebook lacks %q:\n%s", w, md)
		}
	}
	if md := render(phases.GEMMResult{Name: "q_b", Step: 1, M: 1, Dtype: "bf16"}); strings.Contains(md, "served quantized") {
		t.Errorf("a BF16 model's notebook:\n%s", md)
	}
}

package micro

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
)

// linearQuant is each format's quantization_config, as a checkpoint's
// config.json has it: Kimi-K2.5's compressed-tensors int4 (group 32,
// attention left BF16) and DeepSeek-V3's block fp8.
var linearQuant = map[string]string{
	"int4": `{"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{"group_0":{"targets":["Linear"],` +
		`"weights":{"num_bits":4,"type":"int","symmetric":true,"strategy":"group","group_size":32}}},"ignore":["lm_head","re:.*self_attn.*"]}`,
	"fp8": `{"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[128,128]}`,
}

// linearPlan is quantPlan(fmt) with its quantization_config and, at each
// M, a dense MLP served in fmt (gate_up 2048×1024, down 1024×1152; 1152
// is nine fp8 blocks and 36 int4 groups).
func linearPlan(fmtName string) model.Plan {
	p := quantPlan(fmtName)
	p.QuantConfig = json.RawMessage(linearQuant[fmtName])
	for _, m := range p.Batch {
		for _, d := range []struct {
			name, mod string
			n, k      int
		}{{"dense.gate_up", "model.layers.0.mlp.gate_proj", 2048, 1024}, {"dense.down", "model.layers.0.mlp.down_proj", 1024, 1152}} {
			g := model.GEMM{Name: d.name, Step: m, M: m, N: d.n, K: d.k, Dtype: "bf16", Served: fmtName, Module: d.mod, PerStep: 1}
			if fmtName == "int4" {
				g.Group = 32
			}
			p.GEMMs = append(p.GEMMs, g)
		}
	}
	return p
}

// TestEngineLinearAsServed runs micro.py on a GPU with the stand-in for
// vLLM on the Python path (testdata/standin: vLLM's import paths and call
// shapes, computed with PyTorch; its times are not vLLM's). The dense MLP
// served int4 (compressed-tensors) or fp8 (block) is built as vLLM's
// ReplicatedLinear with the config vLLM makes from the quantization_config,
// written in the checkpoint's format, checked against micro's dequantized
// weights and timed as served, beside the experts through the fused MoE;
// the BF16 projection is timed as before. Without it (the device has no
// vLLM) the dense MLP is timed in BF16, served in fmt, not as served: the
// upper bound the budget keeps out of its sum.
func TestEngineLinearAsServed(t *testing.T) {
	py := pyruntest.CUDAPython(t)
	for _, fmtName := range []string{"int4", "fp8"} {
		evs, calls := runStandin(t, py, linearPlan(fmtName))
		want := map[string]string{"int4": "vllm stand-in ReplicatedLinear with CompressedTensorsConfig", "fp8": "vllm stand-in ReplicatedLinear with Fp8Config"}[fmtName]
		method := map[string]string{"int4": "(CompressedTensorsLinearMethod, CompressedTensorsWNA16)", "fp8": "(Fp8LinearMethod)"}[fmtName]
		var env *phases.GPUEnv
		linear := 0
		for _, e := range evs {
			switch d := e.Data.(type) {
			case phases.GPUEnv:
				env = &d
			case phases.GEMMResult:
				isDense := strings.HasPrefix(d.Name, "dense.")
				if isDense && (!d.AsServed || d.Dtype != fmtName || !strings.Contains(d.Kernel, "vllm stand-in ReplicatedLinear "+method)) {
					t.Errorf("%s: %s at M=%d: as served %v, dtype %s, kernel %q", fmtName, d.Name, d.Step, d.AsServed, d.Dtype, d.Kernel)
				}
				if d.Name == "o_proj" && d.AsServed {
					t.Errorf("%s: the BF16 projection is marked as served", fmtName)
				}
				if isDense {
					linear++
				}
			}
		}
		if env == nil || env.EngineLinear != want {
			t.Fatalf("%s: env %+v", fmtName, env)
		}
		if linear != 4 {
			t.Errorf("%s: %d dense GEMMs timed, want 4", fmtName, linear)
		}
		for _, w := range []string{`"prefix": "model.layers.0.mlp.down_proj", "n": 1024, "k": 1152`,
			`"apply": "` + strings.Trim(strings.Split(method, ",")[0], "()") + `", "prefix": "model.layers.0.mlp.gate_proj", "m": 4`} {
			if !strings.Contains(calls, w) {
				t.Errorf("%s: the stand-in saw\n%s\nwant %s", fmtName, calls, w)
			}
		}
	}
	// No vLLM: BF16, served int4, an upper bound.
	for _, e := range runScript(t, py, linearPlan("int4")) {
		switch d := e.Data.(type) {
		case phases.GPUEnv:
			if !strings.HasPrefix(d.EngineLinear, "vLLM is not importable by this Python") {
				t.Errorf("without vLLM the env says %q", d.EngineLinear)
			}
		case phases.GEMMResult:
			if strings.HasPrefix(d.Name, "dense.") && (d.AsServed || d.Served != "int4" || d.Dtype != "bf16") {
				t.Errorf("without vLLM: %s as served %v served %q dtype %s", d.Name, d.AsServed, d.Served, d.Dtype)
			}
		}
	}
}

package micro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
)

// linearHarness loads micro.py as a module (its main does not run) and
// times, through the engine's quantized linear path, every GEMM of the
// plan that path serves, on the CPU: the construction, the weights written
// in the checkpoint's format, the engine's preparation of them, the check
// against micro's dequantized reading and the gemm line micro emits. CUDA
// events need a GPU: the bench here calls the layer and reports fixed
// times. First a line with the env label, then micro's lines. In "timer"
// mode each GEMM goes through micro's StepTimer.linear, as its main does,
// with a "bf16" line where it falls back (micro's BF16 timing not run).
const linearHarness = `
import json, sys
ns = {"__name__": "profdeck_micro"}
exec(compile(open(sys.argv[1]).read(), "micro.py", "exec"), ns)
import torch

class Bench:
    def run(self, fn):
        out = ns["linear_out"](fn())
        assert out.shape[-1] > 0 and bool(torch.isfinite(out.float()).all())
        return 10.0, 9.0, 11.0, 1

plan = json.loads(open(sys.argv[2]).read())
lin, label = ns["engine_linear"](plan)
print(json.dumps({"label": label, "engine": lin is not None}))
timer = ns["StepTimer"](torch, Bench(), (None, None, ""), lin, 4800, 0, "cpu")
for g in plan["gemms"]:
    if lin is None or not ns["linear_served"](g):
        continue
    if sys.argv[3] == "timer":
        if timer.linear(g, g["step_m"]) is None:
            print(json.dumps({"type": "bf16", "name": g["name"], "step_m": g["step_m"]}))
        continue
    try:
        ns["time_engine_linear"](torch, Bench(), lin, g, g["step_m"], 4800, "cpu")
    except Exception as e:
        print(json.dumps({"name": g["name"], "error": ns["first_line"](e)}))
`

type linearLine struct {
	Label    string  `json:"label"`
	Engine   bool    `json:"engine"`
	Name     string  `json:"name"`
	Dtype    string  `json:"dtype"`
	AsServed bool    `json:"as_served"`
	StepUs   float64 `json:"step_us"`
	Kernel   string  `json:"kernel"`
	Error    string  `json:"error"`
	Type     string  `json:"type"`
	Step     int     `json:"step_m"`
	M        int     `json:"m"`
	N        int     `json:"n"`
	K        int     `json:"k"`
	Us       float64 `json:"us"`
	GBs      float64 `json:"gbs"`
}

// cpuTorch is /usr/bin/python3 when it imports torch; the test skips
// otherwise.
func cpuTorch(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		t.Skip("no /usr/bin/python3 with torch here")
	}
	return py
}

// runLinearHarness runs the harness in mode "direct" or "timer" on plan
// with the stand-in on the Python path when standin is true, returning the
// env line and the GEMM lines.
func runLinearHarness(t *testing.T, py, mode string, plan model.Plan, standin bool, env ...string) (linearLine, []linearLine) {
	t.Helper()
	dir := t.TempDir()
	script, planPath := filepath.Join(dir, "micro.py"), filepath.Join(dir, "plan.json")
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, Script, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", linearHarness, script, planPath, mode)
	cmd.Env = append(os.Environ(), env...)
	if standin {
		abs, _ := filepath.Abs(filepath.Join("testdata", "standin"))
		cmd.Env = append(cmd.Env, "PYTHONPATH="+abs)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness: %v\n%s\n%s", err, out.String(), errb.String())
	}
	var lines []linearLine
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l linearLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("harness line %q: %v\nstderr: %s", sc.Text(), err, errb.String())
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		t.Fatalf("harness printed nothing; stderr: %s", errb.String())
	}
	return lines[0], lines[1:]
}

// TestEngineLinearOnCPU builds Kimi-K2.5's quantized linear layers at TP8
// (its dense MLP: int4 pack-quantized, group 32; attention and shared
// experts are left BF16 by its ignore list) through the engine's path with
// the stand-in for vLLM (testdata/standin: vLLM's import paths and call
// shapes, computed with PyTorch; it asserts the format it is handed and
// unpacks it its own way). Then the fallbacks: a layer the engine's config
// leaves unquantized while the plan has it served, a quant_method micro
// writes no weights for, and no vLLM at all.
func TestEngineLinearOnCPU(t *testing.T) {
	py := cpuTorch(t)
	p := pyruntest.KimiPlan(t, 1)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	env, got := runLinearHarness(t, py, "direct", p, true, "PROFDECK_STANDIN_LOG="+log)
	if !env.Engine || env.Label != "vllm stand-in ReplicatedLinear with CompressedTensorsConfig" {
		t.Fatalf("env %+v", env)
	}
	want := map[string]string{"dense.gate_up": "model.layers.0.mlp.gate_proj", "dense.down": "model.layers.0.mlp.down_proj"}
	if len(got) != len(want) {
		t.Fatalf("timed %+v, want %v", got, want)
	}
	for _, l := range got {
		if l.Error != "" || want[l.Name] == "" || !l.AsServed || l.Dtype != "int4" || l.StepUs != 10 ||
			!strings.HasPrefix(l.Kernel, "vllm stand-in ReplicatedLinear (CompressedTensorsLinearMethod, CompressedTensorsWNA16); relative error ") {
			t.Errorf("%+v", l)
		}
		// Bandwidth counts the weights as served (int4: half a byte each),
		// not as BF16.
		if want := (0.5*float64(l.N*l.K) + 2*float64(l.M*l.K+l.M*l.N)) / l.Us / 1e3; math.Abs(l.GBs/want-1) > 1e-6 {
			t.Errorf("%s: %.3f GB/s, want %.3f (int4 weights)", l.Name, l.GBs, want)
		}
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"prefix": "model.layers.0.mlp.gate_proj", "n": 4608, "k": 7168, "weight_packed": [4608, 896], "weight_scale": [4608, 224], "bits": 4, "group": 32`,
		`"prefix": "model.layers.0.mlp.down_proj", "n": 7168, "k": 2304, "weight_packed": [7168, 288], "weight_scale": [7168, 72]`,
		`"apply": "CompressedTensorsLinearMethod", "prefix": "model.layers.0.mlp.down_proj", "m": 1`} {
		if !strings.Contains(string(calls), w) {
			t.Errorf("the stand-in saw\n%s\nwant %s", calls, w)
		}
	}

	// The engine's config leaves the dense MLP unquantized (an ignore
	// entry the plan does not know): each layer falls back with the reason.
	var qc map[string]any
	if err := json.Unmarshal(p.QuantConfig, &qc); err != nil {
		t.Fatal(err)
	}
	qc["ignore"] = append(qc["ignore"].([]any), "re:.*mlp.*")
	p2 := p
	p2.QuantConfig, _ = json.Marshal(qc)
	_, got = runLinearHarness(t, py, "direct", p2, true)
	for _, l := range got {
		if !strings.Contains(l.Error, "vLLM builds "+want[l.Name]+" unquantized (UnquantizedLinearMethod) where the plan has it served int4") {
			t.Errorf("ignored by the engine: %+v", l)
		}
	}

	// A method micro writes no weights for, and no vLLM.
	p3 := p
	p3.QuantConfig = json.RawMessage(`{"quant_method":"gptq","bits":4,"group_size":128}`)
	env, _ = runLinearHarness(t, py, "direct", p3, true)
	if env.Engine || !strings.Contains(env.Label, "not gptq: quantized linear layers are timed in BF16, an upper bound") {
		t.Errorf("gptq: %+v", env)
	}
	env, _ = runLinearHarness(t, py, "direct", p, false)
	if env.Engine || !strings.HasPrefix(env.Label, "vLLM is not importable by this Python") {
		t.Errorf("no vLLM: %+v", env)
	}
}

// TestEngineLinearFailureSaidOnce goes through micro's StepTimer at two
// batch sizes: layers built once are timed as served at both; a layer the
// engine cannot build (its config leaves the dense MLP unquantized) is said
// once, at the first M, as timed in BF16 at every M, and falls back to
// BF16 at both without a second error.
func TestEngineLinearFailureSaidOnce(t *testing.T) {
	py := cpuTorch(t)
	p := pyruntest.KimiPlan(t, 1, 8)
	_, got := runLinearHarness(t, py, "timer", p, true)
	served := map[int]int{}
	for _, l := range got {
		if l.Type != "gemm" || !l.AsServed || l.Error != "" {
			t.Errorf("built layer: %+v", l)
		}
		served[l.Step]++
	}
	if served[1] != 2 || served[8] != 2 {
		t.Errorf("timed as served per M: %v, want both dense layers at M=1 and M=8", served)
	}

	var qc map[string]any
	if err := json.Unmarshal(p.QuantConfig, &qc); err != nil {
		t.Fatal(err)
	}
	qc["ignore"] = append(qc["ignore"].([]any), "re:.*mlp.*")
	p.QuantConfig, _ = json.Marshal(qc)
	_, got = runLinearHarness(t, py, "timer", p, true)
	errs, bf16 := map[string]int{}, map[int]int{}
	for _, l := range got {
		switch l.Type {
		case "error":
			errs[l.Name]++
			if l.Step != 1 || !strings.HasSuffix(l.Error, "where the plan has it served int4: timed in BF16 instead at every M") {
				t.Errorf("error line %+v", l)
			}
		case "bf16":
			bf16[l.Step]++
		default:
			t.Errorf("unbuilt layer: %+v", l)
		}
	}
	if len(errs) != 2 || errs["dense.gate_up (vllm stand-in)"] != 1 || errs["dense.down (vllm stand-in)"] != 1 {
		t.Errorf("error lines per layer: %v, want one for each dense layer", errs)
	}
	if bf16[1] != 2 || bf16[8] != 2 {
		t.Errorf("BF16 fallbacks per M: %v, want both dense layers at M=1 and M=8", bf16)
	}
}

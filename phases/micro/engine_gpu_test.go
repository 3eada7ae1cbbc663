package micro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
)

// quantPlan is a small MoE step served with experts in fmt: at M=4, top-2
// over the experts the plan spreads 8 routed tokens on (2 with 2 tokens,
// 4 with 1), beside a BF16 projection; at M=1, 2 experts of 1 token.
func quantPlan(fmt string) model.Plan {
	g := func(name string, step, m, n, k, batch int, served string) model.GEMM {
		gm := model.GEMM{Name: name, Step: step, M: m, N: n, K: k, Batch: batch, Dtype: "bf16", Served: served, PerStep: 2}
		if served == "int4" {
			gm.Group = 32
		}
		return gm
	}
	return model.Plan{Model: "moe-" + fmt, TP: 1, Batch: []int{1, 4}, GEMMs: []model.GEMM{
		g("o_proj", 1, 1, 1024, 1024, 0, ""),
		g("experts.w13", 1, 1, 1024, 1024, 2, fmt), g("experts.w2", 1, 1, 1024, 512, 2, fmt),
		g("o_proj", 4, 4, 1024, 1024, 0, ""),
		g("experts.w13.m2", 4, 2, 1024, 1024, 2, fmt), g("experts.w2.m2", 4, 2, 1024, 512, 2, fmt),
		g("experts.w13.m1", 4, 1, 1024, 1024, 4, fmt), g("experts.w2.m1", 4, 1, 1024, 512, 4, fmt),
	}}
}

// runScript runs micro.py on plan with env added, returning its events.
func runScript(t *testing.T, py string, plan model.Plan, env ...string) []phases.Event {
	t.Helper()
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", string(Script), "--plan", string(raw), "--no-calib", "--warmup-ms", "2", "--rep-ms", "5")
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("micro.py: %v\n%s\n%s", err, out.String(), errb.String())
	}
	var evs []phases.Event
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l, ok := pyrun.ParseLine(sc.Text())
		if !ok {
			continue
		}
		if l.Type == "error" || l.Type == "fatal" {
			t.Errorf("script %s: %s", l.Type, sc.Text())
		}
		if kind, data, ok := LineEvent(l); ok {
			switch d := data.(type) { // the payloads decode as pointers
			case *phases.GPUEnv:
				data = *d
			case *phases.GEMMResult:
				data = *d
				t.Logf("%s", sc.Text())
			}
			evs = append(evs, phases.Event{Kind: kind, Data: data})
		}
	}
	return evs
}

// runStandin runs micro.py on plan with the stand-in for vLLM on the
// Python path (testdata/standin), returning its events and the calls the
// stand-in logged.
func runStandin(t *testing.T, py string, plan model.Plan) ([]phases.Event, string) {
	t.Helper()
	standin, _ := filepath.Abs(filepath.Join("testdata", "standin"))
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	evs := runScript(t, py, plan, "PYTHONPATH="+standin, "PROFDECK_STANDIN_LOG="+log)
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return evs, string(calls)
}

// TestEngineExpertsAsServed runs micro.py on a GPU with a stand-in for
// vLLM on the Python path (testdata/standin: vLLM's import path and call
// shape, computed with PyTorch; its times are not vLLM's). Quantized
// experts go to the engine's fused-MoE entry point in the served format
// (int4 packed with a scale per group of K; fp8 with 128×128 block
// scales), agree with micro's own dequantized computation, and come back
// timed as served; the BF16 projection is timed as before. Without it
// (the device has no vLLM) the same experts are timed in BF16 and marked
// served int4: the upper bound the budget keeps out of its sum.
func TestEngineExpertsAsServed(t *testing.T) {
	py := pyruntest.CUDAPython(t)
	for _, fmtName := range []string{"int4", "fp8"} {
		evs, calls := runStandin(t, py, quantPlan(fmtName))
		var env *phases.GPUEnv
		asServed := 0
		for _, e := range evs {
			switch d := e.Data.(type) {
			case phases.GPUEnv:
				env = &d
			case phases.GEMMResult:
				isExpert := strings.HasPrefix(d.Name, "experts.")
				if isExpert != d.AsServed || (isExpert && (d.Dtype != fmtName || !strings.Contains(d.Kernel, "vllm stand-in fused_experts"))) {
					t.Errorf("%s: %s at M=%d: as served %v, dtype %s, kernel %q", fmtName, d.Name, d.Step, d.AsServed, d.Dtype, d.Kernel)
				}
				if d.AsServed {
					asServed++
				}
			}
		}
		if env == nil || !strings.HasPrefix(env.EngineMoE, "vllm stand-in fused_experts") {
			t.Fatalf("%s: env %+v", fmtName, env)
		}
		if asServed != 6 {
			t.Errorf("%s: %d expert GEMMs timed as served, want 6", fmtName, asServed)
		}
		want := map[string]string{"int4": `"w1": [2, 1024, 512], "w2": [2, 1024, 256], "w1_dtype": "torch.uint8", "block_shape": [0, 32]`,
			"fp8": `"w1": [2, 1024, 1024], "w2": [2, 1024, 512], "w1_dtype": "torch.float8_e4m3fn", "block_shape": [128, 128]`}[fmtName]
		if !strings.Contains(calls, want) || !strings.Contains(calls, `"tokens": 4, "topk": 2, "experts": 6`) {
			t.Errorf("%s: the stand-in saw\n%s\nwant a call with %s and one of 4 tokens top-2 over 6 experts", fmtName, calls, want)
		}
	}
	// No vLLM: BF16, served int4, an upper bound.
	evs := runScript(t, py, quantPlan("int4"))
	for _, e := range evs {
		switch d := e.Data.(type) {
		case phases.GPUEnv:
			if !strings.Contains(d.EngineMoE, "not importable") {
				t.Errorf("without vLLM the env says %q", d.EngineMoE)
			}
		case phases.GEMMResult:
			if d.AsServed || (strings.HasPrefix(d.Name, "experts.") && d.Served != "int4") {
				t.Errorf("without vLLM: %s as served %v served %q", d.Name, d.AsServed, d.Served)
			}
		}
	}
}

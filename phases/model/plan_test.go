package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// shape is a GEMM's identity in a plan, for comparing with hand-worked
// figures: name, step M, (m, n, k), batch, per step, served dtype.
type shape struct {
	name    string
	m, n, k int
	batch   int
	per     int
	served  string
}

func (s shape) String() string {
	return fmt.Sprintf("%s (%d,%d,%d)×%d per=%d %s", s.name, s.m, s.n, s.k, s.batch, s.per, s.served)
}

func shapesAt(p Plan, m int) []shape {
	var out []shape
	for _, g := range p.At(m) {
		out = append(out, shape{g.Name, g.M, g.N, g.K, g.Count(), g.PerStep, g.Served})
	}
	return out
}

func mustPlan(t *testing.T, preset string, o Options) Plan {
	t.Helper()
	c, ok := Preset(preset)
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	p, err := Build(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkShapes(t *testing.T, p Plan, m int, want []shape) {
	t.Helper()
	got := shapesAt(p, m)
	if len(got) != len(want) {
		t.Fatalf("M=%d: %d GEMMs, want %d:\n got %v\nwant %v", m, len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("M=%d GEMM %d:\n got %v\nwant %v", m, i, got[i], want[i])
		}
	}
}

func TestPlanKimiK25TP8(t *testing.T) {
	p := mustPlan(t, "kimi-k2.5", Options{TP: 8, Batch: []int{1, 8, 128}})
	// hidden 7168, 61 layers (1 dense + 60 MoE), 64 heads → 64/8 = 8 per GPU.
	// q_a+kv_a: N = q_lora 1536 + kv_lora 512 + rope 64 = 2112, K = 7168, replicated.
	// q_b: N = 8 heads × (nope 128 + rope 64) = 1536, K = q_lora 1536.
	// w_uk: 8 heads of (M, kv_lora 512, nope 128); w_uv: 8 of (M, v_head 128, kv_lora 512).
	// o_proj: N = 7168, K = 8 × v_head 128 = 1024.
	// dense layer 0: gate_up N = 2 × 18432/8 = 4608; down K = 18432/8 = 2304 (INT4 served).
	// router: N = 384 experts, K = 7168.
	// experts (TP-sliced): w13 N = 2 × 2048/8 = 512, K = 7168; w2 N = 7168, K = 2048/8 = 256.
	// M=1: 8 routed tokens on 8 distinct experts: 384 × (1 − (1 − 8/384)^1) = 8.
	// shared: same slice widths as one expert; lm_head: 163840/8 = 20480.
	checkShapes(t, p, 1, []shape{
		{"q_a+kv_a", 1, 2112, 7168, 1, 61, ""},
		{"q_b", 1, 1536, 1536, 1, 61, ""},
		{"w_uk", 1, 512, 128, 8, 61, ""},
		{"w_uv", 1, 128, 512, 8, 61, ""},
		{"o_proj", 1, 7168, 1024, 1, 61, ""},
		{"dense.gate_up", 1, 4608, 7168, 1, 1, "int4"},
		{"dense.down", 1, 7168, 2304, 1, 1, "int4"},
		{"router", 1, 384, 7168, 1, 60, ""},
		{"experts.w13", 1, 512, 7168, 8, 60, "int4"},
		{"experts.w2", 1, 7168, 256, 8, 60, "int4"},
		{"shared.gate_up", 1, 512, 7168, 1, 60, ""},
		{"shared.down", 1, 7168, 256, 1, 60, ""},
		{"lm_head", 1, 20480, 7168, 1, 1, ""},
	})
	// M=8: 64 routed tokens; active = round(384 × (1 − (376/384)^8))
	// = round(384 × 0.15516) = round(59.58) = 60 experts; 64 = 60 + 4, so
	// 4 experts get 2 tokens and 56 get 1.
	exp8 := []shape{}
	for _, s := range shapesAt(p, 8) {
		if strings.HasPrefix(s.name, "experts.") {
			exp8 = append(exp8, s)
		}
	}
	want8 := []shape{
		{"experts.w13.m2", 2, 512, 7168, 4, 60, "int4"},
		{"experts.w2.m2", 2, 7168, 256, 4, 60, "int4"},
		{"experts.w13.m1", 1, 512, 7168, 56, 60, "int4"},
		{"experts.w2.m1", 1, 7168, 256, 56, 60, "int4"},
	}
	if fmt.Sprint(exp8) != fmt.Sprint(want8) {
		t.Errorf("M=8 experts:\n got %v\nwant %v", exp8, want8)
	}
	// M=128: 1024 tokens; active = round(384 × (1 − (376/384)^128))
	// = round(384 × 0.93253) = round(358.09) = 358; 1024 = 2×358 + 308, so
	// 308 experts get 3 tokens and 50 get 2 (308×3 + 50×2 = 1024).
	var tokens, experts int
	for _, g := range p.At(128) {
		if strings.HasPrefix(g.Name, "experts.w13") {
			tokens += g.M * g.Count()
			experts += g.Count()
		}
	}
	if tokens != 1024 || experts != 358 {
		t.Errorf("M=128: %d tokens over %d experts, want 1024 over 358", tokens, experts)
	}
	// All-reduces: 2 per layer × 61 + 1 for the embedding = 123, each
	// M × 7168 × 2 bytes = 14336 bytes per token.
	if p.AllReduce != (AllReduce{PerStep: 123, PerLayer: 2, Embedding: 1, BytesPerToken: 14336}) {
		t.Errorf("allreduce %+v", p.AllReduce)
	}
	// EP dispatch: top-8 × 7168 × 2 bytes = 114688 bytes per token.
	if p.AllToAll == nil || p.AllToAll.BytesPerToken != 114688 {
		t.Errorf("alltoall %+v", p.AllToAll)
	}
}

func TestPlanKimiK25EP(t *testing.T) {
	p := mustPlan(t, "kimi-k2.5", Options{TP: 8, EP: true, Batch: []int{1, 64}})
	// EP8: 384/8 = 48 whole experts per GPU: w13 N = 2 × 2048 = 4096, w2 K = 2048.
	// M=1: 8 tokens / 8 GPUs = 1 token here; 48 × (1 − (376/384)) = 1 expert.
	checkShapes(t, p, 1, []shape{
		{"q_a+kv_a", 1, 2112, 7168, 1, 61, ""},
		{"q_b", 1, 1536, 1536, 1, 61, ""},
		{"w_uk", 1, 512, 128, 8, 61, ""},
		{"w_uv", 1, 128, 512, 8, 61, ""},
		{"o_proj", 1, 7168, 1024, 1, 61, ""},
		{"dense.gate_up", 1, 4608, 7168, 1, 1, "int4"},
		{"dense.down", 1, 7168, 2304, 1, 1, "int4"},
		{"router", 1, 384, 7168, 1, 60, ""},
		{"experts.w13", 1, 4096, 7168, 1, 60, "int4"},
		{"experts.w2", 1, 7168, 2048, 1, 60, "int4"},
		{"shared.gate_up", 1, 512, 7168, 1, 60, ""},
		{"shared.down", 1, 7168, 256, 1, 60, ""},
		{"lm_head", 1, 20480, 7168, 1, 1, ""},
	})
	// M=64: 512 tokens / 8 = 64 here; 48 × (1 − (376/384)^64) = 48 × 0.7403
	// = 35.5 → 36 experts; 64 = 36 + 28: 28 experts with 2 tokens, 8 with 1.
	var got []shape
	for _, s := range shapesAt(p, 64) {
		if strings.HasPrefix(s.name, "experts.w13") {
			got = append(got, s)
		}
	}
	want := []shape{{"experts.w13.m2", 2, 4096, 7168, 28, 60, "int4"}, {"experts.w13.m1", 1, 4096, 7168, 8, 60, "int4"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EP M=64:\n got %v\nwant %v", got, want)
	}
}

func TestPlanDeepSeekV3TP8(t *testing.T) {
	p := mustPlan(t, "deepseek-v3", Options{TP: 8, Batch: []int{1}})
	// 128 heads / 8 = 16 per GPU: q_b N = 16 × 192 = 3072; o_proj K = 16 × 128 = 2048.
	// 3 dense layers, 58 MoE layers; 256 experts, top-8; FP8 weights except
	// router and lm_head. lm_head: 129280/8 = 16160.
	checkShapes(t, p, 1, []shape{
		{"q_a+kv_a", 1, 2112, 7168, 1, 61, "fp8"},
		{"q_b", 1, 3072, 1536, 1, 61, "fp8"},
		{"w_uk", 1, 512, 128, 16, 61, ""},
		{"w_uv", 1, 128, 512, 16, 61, ""},
		{"o_proj", 1, 7168, 2048, 1, 61, "fp8"},
		{"dense.gate_up", 1, 4608, 7168, 1, 3, "fp8"},
		{"dense.down", 1, 7168, 2304, 1, 3, "fp8"},
		{"router", 1, 256, 7168, 1, 58, ""},
		{"experts.w13", 1, 512, 7168, 8, 58, "fp8"},
		{"experts.w2", 1, 7168, 256, 8, 58, "fp8"},
		{"shared.gate_up", 1, 512, 7168, 1, 58, "fp8"},
		{"shared.down", 1, 7168, 256, 1, 58, "fp8"},
		{"lm_head", 1, 16160, 7168, 1, 1, ""},
	})
	if p.AllReduce.PerStep != 123 || p.AllReduce.BytesPerToken != 14336 {
		t.Errorf("allreduce %+v", p.AllReduce)
	}
}

func TestPlanQwen3MoETP8(t *testing.T) {
	p := mustPlan(t, "qwen3-235b-a22b", Options{TP: 8, Batch: []int{1}})
	// GQA: 64 q heads / 8 = 8; 4 KV heads < 8 ranks → 1 replicated per GPU:
	// qkv N = (8 + 2×1) × 128 = 1280, K = 4096; o_proj K = 8 × 128 = 1024.
	// 94 MoE layers, 128 experts top-8, moe 1536: w13 N = 2×1536/8 = 384, w2 K = 192.
	// No shared expert; lm_head 151936/8 = 18992.
	checkShapes(t, p, 1, []shape{
		{"qkv", 1, 1280, 4096, 1, 94, ""},
		{"o_proj", 1, 4096, 1024, 1, 94, ""},
		{"router", 1, 128, 4096, 1, 94, ""},
		{"experts.w13", 1, 384, 4096, 8, 94, ""},
		{"experts.w2", 1, 4096, 192, 8, 94, ""},
		{"lm_head", 1, 18992, 4096, 1, 1, ""},
	})
	// 2 × 94 + 1 = 189 all-reduces of 4096 × 2 = 8192 bytes per token.
	if p.AllReduce.PerStep != 189 || p.AllReduce.BytesPerToken != 8192 {
		t.Errorf("allreduce %+v", p.AllReduce)
	}
}

func TestPlanLlama405BTP8(t *testing.T) {
	p := mustPlan(t, "llama-3.1-405b", Options{TP: 8, Batch: []int{4}, NoEmbeddingAllReduce: true})
	// 128 heads / 8 = 16; 8 KV heads / 8 = 1: qkv N = (16 + 2) × 128 = 2304, K = 16384;
	// o_proj K = 16 × 128 = 2048; gate_up N = 2 × 53248/8 = 13312; down K = 6656;
	// lm_head 128256/8 = 16032. Dense: no router, no experts, no All-to-All.
	checkShapes(t, p, 4, []shape{
		{"qkv", 4, 2304, 16384, 1, 126, ""},
		{"o_proj", 4, 16384, 2048, 1, 126, ""},
		{"dense.gate_up", 4, 13312, 16384, 1, 126, ""},
		{"dense.down", 4, 16384, 6656, 1, 126, ""},
		{"lm_head", 4, 16032, 16384, 1, 1, ""},
	})
	// Without the embedding's all-reduce: 2 × 126 = 252 of 16384 × 2 bytes per token.
	if p.AllReduce.PerStep != 252 || p.AllReduce.BytesPerToken != 32768 || p.AllToAll != nil {
		t.Errorf("allreduce %+v alltoall %+v", p.AllReduce, p.AllToAll)
	}
}

func TestPlanTP1HasNoAllReduce(t *testing.T) {
	p := mustPlan(t, "llama-3.1-405b", Options{TP: 1, Batch: []int{1}})
	if p.AllReduce.PerStep != 0 {
		t.Errorf("tp 1: %+v", p.AllReduce)
	}
	if g := p.At(1)[0]; g.N != (128+2*8)*128 {
		t.Errorf("tp 1 qkv N = %d", g.N)
	}
}

func TestPlanErrors(t *testing.T) {
	c, _ := Preset("kimi-k2.5")
	for _, o := range []Options{{TP: 0, Batch: []int{1}}, {TP: 3, Batch: []int{1}}, {TP: 8, Batch: []int{0}}} {
		if _, err := Build(c, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	_, err := Build(c, Options{TP: 3, Batch: []int{1}})
	if err == nil || !strings.Contains(err.Error(), "num_attention_heads 64 is not divisible by tp 3") {
		t.Errorf("tp 3: %v", err)
	}
}

func TestPlanDryRunJSON(t *testing.T) {
	p := mustPlan(t, "kimi-k2.5", Options{TP: 8, Batch: []int{1}})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"model":"kimi-k2.5"`, `"tp":8`, `"ep":false`,
		`{"name":"o_proj","step_m":1,"m":1,"n":7168,"k":1024,"dtype":"bf16","per_step":61}`,
		`"allreduce":{"per_step":123,"per_layer":2,"embedding":1,"bytes_per_token":14336}`} {
		if !strings.Contains(s, want) {
			t.Errorf("plan JSON lacks %s", want)
		}
	}
}

func TestActiveExperts(t *testing.T) {
	// Worked by hand: E=384, k=8.
	for _, c := range []struct{ m, want int }{{1, 8}, {4, 31}, {16, 110}, {32, 188}, {64, 284}, {128, 358}, {256, 382}} {
		if got := ActiveExperts(384, 384, 8, c.m, 8*c.m); got != c.want {
			t.Errorf("M=%d: %d active, want %d", c.m, got, c.want)
		}
	}
}

func BenchmarkBuildKimi(b *testing.B) {
	c, _ := Preset("kimi-k2.5")
	for b.Loop() {
		if _, err := Build(c, Options{TP: 8, Batch: []int{1, 8, 64, 128}}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPlanNamesAreUniquePerStep(t *testing.T) {
	for _, n := range PresetNames() {
		for _, ep := range []bool{false, true} {
			p := mustPlan(t, n, Options{TP: 8, EP: ep, Batch: []int{1, 8, 64, 128, 256}})
			seen := map[string]bool{}
			for _, g := range p.GEMMs {
				k := fmt.Sprintf("%d/%s", g.Step, g.Name)
				if seen[k] {
					t.Errorf("%s ep=%v: %s twice", n, ep, k)
				}
				seen[k] = true
			}
		}
	}
}

// A quantized model's plan carries its quantization_config as written and
// names each served weight's module, which the engine's config matches its
// targets and ignore list against; BF16 weights name none.
func TestPlanCarriesQuantization(t *testing.T) {
	p := mustPlan(t, "kimi-k2.5", Options{TP: 8, Batch: []int{1}})
	var qc struct {
		Method string   `json:"quant_method"`
		Format string   `json:"format"`
		Ignore []string `json:"ignore"`
	}
	if err := json.Unmarshal(p.QuantConfig, &qc); err != nil || qc.Method != "compressed-tensors" || qc.Format != "pack-quantized" || len(qc.Ignore) != 3 {
		t.Fatalf("quantization_config %s (%v)", p.QuantConfig, err)
	}
	modules := map[string]string{}
	for _, g := range p.At(1) {
		modules[g.Name] = g.Module
		if (g.Served == "") != (g.Module == "") {
			t.Errorf("%s: served %q, module %q", g.Name, g.Served, g.Module)
		}
	}
	want := map[string]string{"dense.gate_up": "model.layers.0.mlp.gate_proj", "dense.down": "model.layers.0.mlp.down_proj",
		"experts.w13": "model.layers.1.mlp.experts.0.gate_proj", "q_b": "", "lm_head": ""}
	for n, m := range want {
		if modules[n] != m {
			t.Errorf("%s: module %q, want %q", n, modules[n], m)
		}
	}
	raw, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(raw), `"quantization_config":{"quant_method":"compressed-tensors"`) {
		t.Errorf("plan JSON: %v\n%.300s", err, raw)
	}
	if bf := mustPlan(t, "llama-3.1-405b", Options{TP: 8, Batch: []int{1}}); bf.QuantConfig != nil {
		t.Errorf("a BF16 model's plan carries %s", bf.QuantConfig)
	}
}

// The plan fills in no default batch sizes: none given is an error naming
// the field (the campaign holds the default).
func TestBuildNeedsBatch(t *testing.T) {
	c, _ := Preset("kimi-k2.5")
	if _, err := Build(c, Options{TP: 8}); err == nil || !strings.HasPrefix(err.Error(), "Batch:") {
		t.Errorf("no batch sizes: %v", err)
	}
}

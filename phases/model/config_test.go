package model

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote"
)

func TestParseKimiTextConfig(t *testing.T) {
	b, err := os.ReadFile("testdata/kimi-k2.5-config.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("kimi", b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Attention != AttnMLA || c.Hidden != 7168 || c.Layers != 61 || c.Experts != 384 || c.TopK != 8 ||
		c.DenseLayers != 1 || c.MoELayers != 60 || c.SharedExperts != 1 || c.Vocab != 163840 || c.QLoraRank != 1536 {
		t.Errorf("kimi config: %+v", c)
	}
	if c.Quant.Weight != "int4" || c.Quant.GroupSize != 32 {
		t.Errorf("quant: %+v", c.Quant)
	}
	for module, want := range map[string]string{
		"lm_head":                              "",
		"model.layers.3.self_attn.o_proj":      "",
		"model.layers.3.mlp.shared_experts.up": "",
		"model.layers.3.mlp.experts.7.up_proj": "int4",
		"model.layers.0.mlp.down_proj":         "int4",
		"model.layers.3.mlp.gate":              "",
	} {
		if got := c.Quant.Served(module); got != want {
			t.Errorf("served %s = %q, want %q", module, got, want)
		}
	}
}

func TestParseTopLevelQuantAppliesToTextConfig(t *testing.T) {
	b := []byte(`{"quantization_config":{"quant_method":"fp8"},"text_config":{"hidden_size":4096,"num_hidden_layers":2,
		"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,"intermediate_size":14336}}`)
	c, err := Parse("x", b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Quant.Weight != "fp8" || c.Attention != AttnGQA || c.HeadDim != 128 || c.DenseLayers != 2 {
		t.Errorf("%+v", c)
	}
}

func TestParseUnsupportedNamesMissingFields(t *testing.T) {
	// A GPT-2 style config uses n_embd / n_layer / n_head.
	_, err := Parse("gpt2.json", []byte(`{"architectures":["GPT2LMHeadModel"],"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"vocab_size":50257}`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"gpt2.json", "GPT2LMHeadModel", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// MoE without top-k.
	_, err = Parse("moe", []byte(`{"hidden_size":1024,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":1000,"num_experts":8,"moe_intermediate_size":512}`))
	if err == nil || !strings.Contains(err.Error(), "num_experts_per_tok") {
		t.Errorf("moe without top-k: %v", err)
	}
	if _, err := Parse("bad", []byte(`{"hidden_size":`)); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestLayerSplitQwenSparseStep(t *testing.T) {
	b := []byte(`{"model_type":"qwen3_moe","hidden_size":2048,"num_hidden_layers":8,"num_attention_heads":16,"num_key_value_heads":4,
		"head_dim":128,"vocab_size":1000,"intermediate_size":6144,"moe_intermediate_size":768,"num_experts":64,"num_experts_per_tok":8,
		"decoder_sparse_step":2,"mlp_only_layers":[1]}`)
	c, err := Parse("q", b)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse where (i+1) % 2 == 0 and i not in [1]: i = 3, 5, 7 → 3 MoE, 5 dense.
	if c.MoELayers != 3 || c.DenseLayers != 5 {
		t.Errorf("moe %d dense %d", c.MoELayers, c.DenseLayers)
	}
}

func TestPresets(t *testing.T) {
	names := PresetNames()
	for _, want := range []string{"deepseek-v3", "kimi-k2.5", "llama-3.1-405b", "qwen3-235b-a22b"} {
		if _, ok := Preset(want); !ok {
			t.Errorf("preset %s missing (have %v)", want, names)
		}
	}
	if _, ok := Preset("KIMI-K2.5"); !ok {
		t.Error("preset names should be case-insensitive")
	}
	if _, ok := Preset("../model"); ok {
		t.Error("path-like preset name accepted")
	}
}

// fileHost is a host that only serves files, for Resolve's host branch.
type fileHost struct{ files map[string]string }

func (h fileHost) Name() string { return "gpu1" }
func (h fileHost) Run(context.Context, string, io.Reader, func(remote.Line)) error {
	return nil
}
func (h fileHost) ReadFile(_ context.Context, p string) ([]byte, error) {
	if s, ok := h.files[p]; ok {
		return []byte(s), nil
	}
	return nil, os.ErrNotExist
}
func (h fileHost) WriteFile(context.Context, string, []byte, os.FileMode) error { return nil }
func (h fileHost) Follow(context.Context, string, int64, func(remote.FollowEvent)) error {
	return nil
}
func (h fileHost) DialContext(context.Context, string, string) (net.Conn, error) { return nil, nil }
func (h fileHost) Close() error                                                  { return nil }

func TestResolve(t *testing.T) {
	ctx := context.Background()
	if c, err := Resolve(ctx, nil, "deepseek-v3"); err != nil || c.Experts != 256 {
		t.Errorf("preset: %v %+v", err, c)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	kimi, _ := os.ReadFile("testdata/kimi-k2.5-config.json")
	if err := os.WriteFile(p, kimi, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Resolve(ctx, nil, p); err != nil || c.Experts != 384 {
		t.Errorf("local file: %v %+v", err, c)
	}
	h := fileHost{files: map[string]string{"/models/kimi/config.json": string(kimi)}}
	c, err := Resolve(ctx, h, "/models/kimi/config.json")
	if err != nil || c.Experts != 384 || !strings.HasPrefix(c.Name, "gpu1:") {
		t.Errorf("host file: %v %+v", err, c)
	}
	if _, err := Resolve(ctx, h, "/models/missing/config.json"); err == nil || !strings.Contains(err.Error(), "gpu1") {
		t.Errorf("missing host file: %v", err)
	}
	if _, err := Resolve(ctx, nil, "no-such-model"); err == nil || !strings.Contains(err.Error(), "kimi-k2.5") {
		t.Errorf("unknown name: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	kimi, _ := os.ReadFile("testdata/kimi-k2.5-config.json")
	f.Add(kimi)
	for _, n := range PresetNames() {
		b, _ := presetFS.ReadFile("presets/" + n + ".json")
		f.Add(b)
	}
	f.Add([]byte(`{"text_config":null}`))
	f.Add([]byte(`{"hidden_size":-1,"num_hidden_layers":1e9}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("fuzz", b)
		if err != nil {
			return
		}
		if c.Layers > 1<<16 || c.Hidden > 1<<20 {
			return // absurd sizes: planning would be slow, not wrong
		}
		_, _ = Build(c, Options{TP: 8, Batch: []int{1, 3}})
	})
}

func TestPresetFor(t *testing.T) {
	for name, want := range map[string]string{
		"moonshotai/Kimi-K2.5":               "kimi-k2.5",
		"moonshotai/Kimi-K2-Instruct":        "kimi-k2.5",
		"deepseek-ai/DeepSeek-V3-0324":       "deepseek-v3",
		"Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
		"meta-llama/Llama-3.1-405B-Instruct": "llama-3.1-405b",
		"mistralai/Mixtral-8x7B":             "",
	} {
		got, _ := PresetFor(name)
		if got != want {
			t.Errorf("PresetFor(%q) = %q, want %q", name, got, want)
		}
	}
	if s, err := Spec("", "", "moonshotai/Kimi-K2.5"); err != nil || s != "kimi-k2.5" {
		t.Errorf("Spec: %q %v", s, err)
	}
	if _, err := Spec("", "", "unknown"); err == nil || !strings.Contains(err.Error(), "model.preset") {
		t.Errorf("Spec unknown: %v", err)
	}
}

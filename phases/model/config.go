// Package model describes a served LLM for the GPU phases: it reads a Hugging
// Face config.json (or a built-in preset) and plans one decode step per GPU,
// every GEMM with its (M, N, K) and how often it runs, and the step's
// all-reduces, for a tensor-parallel size with or without expert parallelism.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/profdeck/profdeck/remote"
)

// Attention kinds.
const (
	AttnMLA = "mla" // DeepSeek-V2/V3-style multi-head latent attention
	AttnGQA = "gqa" // grouped-query (or plain multi-head) attention
)

// Config is what the plan needs from a model's config.json.
type Config struct {
	Name      string `json:"name"`
	ModelType string `json:"model_type"`
	Attention string `json:"attention"` // AttnMLA or AttnGQA

	Hidden  int `json:"hidden_size"`
	Layers  int `json:"num_hidden_layers"`
	Heads   int `json:"num_attention_heads"`
	KVHeads int `json:"num_key_value_heads"`
	HeadDim int `json:"head_dim"`
	Vocab   int `json:"vocab_size"`

	// MLA.
	QLoraRank  int `json:"q_lora_rank,omitempty"`
	KVLoraRank int `json:"kv_lora_rank,omitempty"`
	QKNope     int `json:"qk_nope_head_dim,omitempty"`
	QKRope     int `json:"qk_rope_head_dim,omitempty"`
	VHeadDim   int `json:"v_head_dim,omitempty"`

	// MLP: dense layers use Intermediate; MoE layers use the expert fields.
	Intermediate    int `json:"intermediate_size"`
	MoEIntermediate int `json:"moe_intermediate_size,omitempty"`
	Experts         int `json:"experts,omitempty"`
	TopK            int `json:"experts_per_token,omitempty"`
	SharedExperts   int `json:"shared_experts,omitempty"`
	// SharedIntermediate is the shared expert's width when the config gives
	// it directly (Qwen2-MoE); otherwise SharedExperts × MoEIntermediate.
	SharedIntermediate int `json:"shared_intermediate_size,omitempty"`
	DenseLayers        int `json:"dense_layers"` // layers with a dense MLP
	MoELayers          int `json:"moe_layers"`   // layers with an MoE MLP

	Quant Quant `json:"quant"`
}

// IsMoE reports whether the model has routed experts.
func (c Config) IsMoE() bool { return c.Experts > 0 && c.MoELayers > 0 }

// Limits past which a config is rejected as implausible (a typo, or a
// file that is not a model config).
const (
	maxDim    = 1 << 22
	maxLayers = 10000
)

// hfConfig is the subset of config.json fields read, as pointers so a
// missing field can be told from a zero. readHF fills it, for the plan
// (Parse) and for the one-line description (Summarize).
type hfConfig struct {
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures"`
	TorchDtype    string   `json:"torch_dtype"`

	Hidden  *int `json:"hidden_size"`
	Layers  *int `json:"num_hidden_layers"`
	Heads   *int `json:"num_attention_heads"`
	KVHeads *int `json:"num_key_value_heads"`
	HeadDim *int `json:"head_dim"`
	Vocab   *int `json:"vocab_size"`

	QLoraRank  *int `json:"q_lora_rank"`
	KVLoraRank *int `json:"kv_lora_rank"`
	QKNope     *int `json:"qk_nope_head_dim"`
	QKRope     *int `json:"qk_rope_head_dim"`
	VHeadDim   *int `json:"v_head_dim"`

	Intermediate    *int `json:"intermediate_size"`
	MoEIntermediate *int `json:"moe_intermediate_size"`

	NRoutedExperts  *int `json:"n_routed_experts"`  // DeepSeek
	NumExperts      *int `json:"num_experts"`       // Qwen-MoE
	NumLocalExperts *int `json:"num_local_experts"` // Mixtral
	TopK            *int `json:"num_experts_per_tok"`
	NSharedExperts  *int `json:"n_shared_experts"`
	SharedInter     *int `json:"shared_expert_intermediate_size"`

	FirstKDense   *int  `json:"first_k_dense_replace"`
	MoELayerFreq  *int  `json:"moe_layer_freq"`
	SparseStep    *int  `json:"decoder_sparse_step"`
	MLPOnlyLayers []int `json:"mlp_only_layers"`

	// Older architectures' names for the sizes, and other models' names
	// for the experts' counts (described by Summarize, not planned).
	NLayer    *int `json:"n_layer"`
	NumLayers *int `json:"num_layers"`
	DModel    *int `json:"d_model"`
	NEmbd     *int `json:"n_embd"`
	NHead     *int `json:"n_head"`
	MoETopK   *int `json:"moe_topk"`
	NumShared *int `json:"num_shared_experts"`

	// The nested objects, as found and then as readHF reads them (nil
	// when absent, null, or, read leniently, not an object).
	RawQuant     json.RawMessage `json:"quantization_config"`
	RawText      json.RawMessage `json:"text_config"`
	Quantization *hfQuant        `json:"-"`
	TextConfig   *hfConfig       `json:"-"` // the top level's only
}

// readHF is the one reader of a config.json, for the plan (Parse, strict)
// and the one-line description (Summarize, lenient). Strict refuses a
// field of the wrong type; lenient reads it as absent and keeps the rest
// (a text_config or quantization_config that is not an object as well).
// Text that is not JSON is an error either way.
func readHF(data []byte, lenient bool) (hfConfig, error) {
	top, err := readLevel(data, lenient, "")
	if err != nil {
		return hfConfig{}, err
	}
	if nested(top.RawText, lenient) {
		inner, err := readLevel(top.RawText, lenient, "text_config")
		if err != nil {
			return hfConfig{}, err
		}
		top.TextConfig = &inner
	}
	return top, nil
}

// readLevel reads one level of a config, the top ("") or its
// text_config, and its quantization_config; an error names where.
func readLevel(data []byte, lenient bool, where string) (hfConfig, error) {
	var c hfConfig
	if err := unmarshal(data, &c, lenient); err != nil {
		if where == "" {
			return hfConfig{}, fmt.Errorf("not a JSON config.json: %w", err)
		}
		return hfConfig{}, fmt.Errorf("%s: %w", where, err)
	}
	if nested(c.RawQuant, lenient) {
		c.Quantization = &hfQuant{raw: c.RawQuant}
		if err := unmarshal(c.RawQuant, c.Quantization, lenient); err != nil {
			return hfConfig{}, fmt.Errorf("%s: %w", strings.TrimPrefix(where+": quantization_config", ": "), err)
		}
	}
	return c, nil
}

// nested reports whether a nested object is there to read: present and
// not null, and, read leniently, an object (read strictly, anything else
// is read to report its error).
func nested(raw json.RawMessage, lenient bool) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	return !lenient || raw[0] == '{'
}

// unmarshal decodes data into v; read leniently, values of the wrong type
// are left out rather than refused.
func unmarshal(data []byte, v any, lenient bool) error {
	err := json.Unmarshal(data, v)
	if te := (*json.UnmarshalTypeError)(nil); lenient && errors.As(err, &te) {
		return nil
	}
	return err
}

// languageModel is the part of a config that describes the language
// model: its text_config when it nests one (multimodal wrappers such as
// Kimi-K2.5), taking the top's quantization_config when it has none.
func (top hfConfig) languageModel() hfConfig {
	if top.TextConfig == nil {
		return top
	}
	inner := *top.TextConfig
	if inner.Quantization == nil {
		inner.Quantization = top.Quantization
	}
	return inner
}

// Parse reads a config.json. name labels the model in plans and errors.
// A config that nests its language model under text_config (multimodal
// wrappers such as Kimi-K2.5) is read from there; a quantization_config at
// either level applies.
func Parse(name string, data []byte) (Config, error) {
	top, err := readHF(data, false)
	if err != nil {
		return Config{}, fmt.Errorf("model config %s: %w", name, err)
	}
	c, err := fromHF(top.languageModel())
	if err != nil {
		return Config{}, fmt.Errorf("model config %s: %w", name, err)
	}
	c.Name = name
	return c, nil
}

func val(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func fromHF(hf hfConfig) (Config, error) {
	var missing []string
	var implausible []string
	need := func(p *int, field string) int {
		if p == nil || *p <= 0 {
			missing = append(missing, field)
			return 0
		}
		if *p > maxDim {
			implausible = append(implausible, fmt.Sprintf("%s %d", field, *p))
			return 0
		}
		return *p
	}
	c := Config{ModelType: hf.ModelType}
	c.Hidden = need(hf.Hidden, "hidden_size")
	c.Layers = need(hf.Layers, "num_hidden_layers")
	c.Heads = need(hf.Heads, "num_attention_heads")
	c.Vocab = need(hf.Vocab, "vocab_size")
	c.attention(hf, need)
	if c.Layers > maxLayers {
		return Config{}, fmt.Errorf("num_hidden_layers %d is not a plausible model", c.Layers)
	}
	c.experts(hf, need)
	if c.DenseLayers > 0 || c.Experts == 0 {
		c.Intermediate = need(hf.Intermediate, "intermediate_size")
	} else {
		c.Intermediate = val(hf.Intermediate)
	}
	if len(implausible) > 0 {
		return Config{}, fmt.Errorf("implausible sizes: %s", strings.Join(implausible, ", "))
	}
	if c.Experts > maxDim || c.TopK > c.Experts && c.Experts > 0 {
		return Config{}, fmt.Errorf("implausible experts: %d routed, %d per token", c.Experts, c.TopK)
	}
	if len(missing) > 0 {
		arch := hf.ModelType
		if len(hf.Architectures) > 0 {
			arch = strings.Join(hf.Architectures, ",")
		}
		if arch == "" {
			arch = "unknown architecture"
		}
		return Config{}, fmt.Errorf("unsupported architecture (%s): missing %s", arch, strings.Join(missing, ", "))
	}
	q, err := parseQuant(hf.Quantization)
	if err != nil {
		return Config{}, err
	}
	c.Quant = q
	return c, nil
}

// attention reads the attention's kind and sizes: MLA when the config has
// a kv_lora_rank, else grouped-query attention. need reads a required
// field.
func (c *Config) attention(hf hfConfig, need func(*int, string) int) {
	if val(hf.KVLoraRank) > 0 {
		c.Attention = AttnMLA
		c.KVLoraRank = val(hf.KVLoraRank)
		c.QLoraRank = val(hf.QLoraRank) // null or 0: q_proj straight from hidden
		c.QKNope = need(hf.QKNope, "qk_nope_head_dim")
		c.QKRope = need(hf.QKRope, "qk_rope_head_dim")
		c.VHeadDim = need(hf.VHeadDim, "v_head_dim")
		c.KVHeads = c.Heads
		return
	}
	c.Attention = AttnGQA
	c.KVHeads = val(hf.KVHeads)
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	c.HeadDim = val(hf.HeadDim)
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
}

// experts reads the routed experts (DeepSeek's, Qwen-MoE's or Mixtral's
// names) and splits the layers into dense and MoE ones.
func (c *Config) experts(hf hfConfig, need func(*int, string) int) {
	c.Experts = val(hf.NRoutedExperts)
	if c.Experts == 0 {
		c.Experts = val(hf.NumExperts)
	}
	if c.Experts == 0 {
		c.Experts = val(hf.NumLocalExperts)
	}
	if c.Experts == 0 {
		c.DenseLayers = c.Layers
		return
	}
	c.TopK = need(hf.TopK, "num_experts_per_tok")
	c.MoEIntermediate = val(hf.MoEIntermediate)
	if c.MoEIntermediate == 0 { // Mixtral: the experts use intermediate_size
		c.MoEIntermediate = need(hf.Intermediate, "moe_intermediate_size")
	}
	c.SharedExperts = val(hf.NSharedExperts)
	c.SharedIntermediate = val(hf.SharedInter)
	c.DenseLayers, c.MoELayers = layerSplit(hf, c.Layers)
}

// layerSplit counts dense and MoE layers from the config's layout fields:
// first_k_dense_replace and moe_layer_freq (DeepSeek), decoder_sparse_step and
// mlp_only_layers (Qwen-MoE); with none of them every layer is MoE.
func layerSplit(hf hfConfig, layers int) (dense, moe int) {
	first := val(hf.FirstKDense)
	freq := val(hf.MoELayerFreq)
	if freq <= 0 {
		freq = 1
	}
	step := val(hf.SparseStep)
	if step <= 0 {
		step = 1
	}
	only := map[int]bool{}
	for _, l := range hf.MLPOnlyLayers {
		only[l] = true
	}
	for i := 0; i < layers; i++ {
		isMoE := i >= first && i%freq == 0 && (i+1)%step == 0 && !only[i]
		if isMoE {
			moe++
		} else {
			dense++
		}
	}
	return dense, moe
}

// LoadFile reads a local config.json.
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("model config: %w", err)
	}
	return Parse(path, b)
}

// Resolve turns spec into a Config: a preset name, a local file, or (when h
// is not nil and no local file has that path) a file on the host.
func Resolve(ctx context.Context, h remote.Host, spec string) (Config, error) {
	if spec == "" {
		return Config{}, errors.New("no model given: name a preset (" + strings.Join(PresetNames(), ", ") + ") or a config.json")
	}
	if c, ok := Preset(spec); ok {
		return c, nil
	}
	if _, err := os.Stat(spec); err == nil {
		return LoadFile(spec)
	}
	if h != nil && strings.ContainsAny(spec, "/.") {
		b, err := h.ReadFile(ctx, spec)
		if err != nil {
			return Config{}, fmt.Errorf("model config %s on %s: %w", spec, h.Name(), err)
		}
		return Parse(h.Name()+":"+spec, b)
	}
	return Config{}, fmt.Errorf("model %q is neither a preset (%s) nor a config.json file", spec, strings.Join(PresetNames(), ", "))
}

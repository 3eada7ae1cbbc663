package model

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Summarize turns a Hugging Face config.json into one line for the
// system information, reading what Parse needs and what only describes the
// model (aliases of older architectures, the dtype) without asking for
// every field a plan needs: the
// model type, layers, hidden size, heads, experts, vocabulary and
// quantization, e.g. "kimi_k2: 61 layers, hidden 7168, 64 heads, MoE 384
// experts (8 active, 1 shared), vocab 163840, compressed-tensors int4 g32".
// A multimodal config's text_config is what is summarised.
func Summarize(raw []byte) (string, error) {
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return "", fmt.Errorf("model config: %w", err)
	}
	cfg := top
	if tc, ok := top["text_config"].(map[string]any); ok {
		cfg = tc
	}
	var parts []string
	if n := intOf(cfg, "num_hidden_layers", "n_layer", "num_layers"); n > 0 {
		parts = append(parts, fmt.Sprintf("%d layers", n))
	}
	if n := intOf(cfg, "hidden_size", "d_model", "n_embd"); n > 0 {
		parts = append(parts, fmt.Sprintf("hidden %d", n))
	}
	if n := intOf(cfg, "num_attention_heads", "n_head"); n > 0 {
		h := fmt.Sprintf("%d heads", n)
		if kv := intOf(cfg, "num_key_value_heads"); kv > 0 && kv != n {
			h += fmt.Sprintf(" (%d KV)", kv)
		}
		if intOf(cfg, "kv_lora_rank") > 0 {
			h += " MLA"
		}
		parts = append(parts, h)
	}
	if e := intOf(cfg, "n_routed_experts", "num_experts", "num_local_experts"); e > 0 {
		var extra []string
		if k := intOf(cfg, "num_experts_per_tok", "moe_topk"); k > 0 {
			extra = append(extra, fmt.Sprintf("%d active", k))
		}
		if s := intOf(cfg, "n_shared_experts", "num_shared_experts"); s > 0 {
			extra = append(extra, fmt.Sprintf("%d shared", s))
		}
		m := fmt.Sprintf("MoE %d experts", e)
		if len(extra) > 0 {
			m += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, m)
	}
	if n := intOf(cfg, "vocab_size"); n > 0 {
		parts = append(parts, fmt.Sprintf("vocab %d", n))
	}
	q, _ := cfg["quantization_config"].(map[string]any)
	if q == nil {
		q, _ = top["quantization_config"].(map[string]any)
	}
	if q != nil {
		parts = append(parts, quantSummary(q))
	} else if d, ok := cfg["torch_dtype"].(string); ok && d != "" {
		parts = append(parts, d)
	}
	typ, _ := cfg["model_type"].(string)
	if typ == "" {
		typ, _ = top["model_type"].(string)
	}
	if typ == "" && len(parts) == 0 {
		return "", fmt.Errorf("model config: no model_type and no known size fields")
	}
	if typ == "" {
		typ = "model"
	}
	if len(parts) == 0 {
		return typ, nil
	}
	return typ + ": " + strings.Join(parts, ", "), nil
}

// quantSummary names a quantization_config: method, bits, group size.
func quantSummary(q map[string]any) string {
	s, _ := q["quant_method"].(string)
	if s == "" {
		s = "quantized"
	}
	bits, group := intOf(q, "bits", "w_bit"), intOf(q, "group_size", "q_group_size")
	typ := "int"
	if groups, ok := q["config_groups"].(map[string]any); ok {
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g, _ := groups[k].(map[string]any)
			w, _ := g["weights"].(map[string]any)
			if w == nil {
				continue
			}
			if b := intOf(w, "num_bits"); b > 0 {
				bits = b
			}
			if gs := intOf(w, "group_size"); gs > 0 {
				group = gs
			}
			if t, ok := w["type"].(string); ok && t != "" {
				typ = t
			}
			break
		}
	}
	if fmtName, ok := q["fmt"].(string); ok && fmtName != "" { // fp8 configs
		s += " " + fmtName
	}
	if bits > 0 {
		s += fmt.Sprintf(" %s%d", typ, bits)
	}
	if group > 0 {
		s += fmt.Sprintf(" g%d", group)
	}
	return s
}

// intOf returns the first of keys that holds a positive whole number.
func intOf(m map[string]any, keys ...string) int {
	for _, k := range keys {
		if v, ok := m[k].(float64); ok && v > 0 && v < 1e12 && v == float64(int64(v)) {
			return int(v)
		}
	}
	return 0
}

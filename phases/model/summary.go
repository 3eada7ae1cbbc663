package model

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Summarize turns a Hugging Face config.json into one line for the
// system information, reading what Parse needs and what only describes the
// model (aliases of older architectures, the dtype) without asking for
// every field a plan needs: the
// model type, layers, hidden size, heads, experts, vocabulary and
// quantization, e.g. "kimi_k2: 61 layers, hidden 7168, 64 heads MLA, MoE 384
// experts (8 active, 1 shared), vocab 163840, compressed-tensors int4 g32".
// A multimodal config's text_config is what is summarised. It reads the
// file leniently (readHF): a field of the wrong type is left out.
func Summarize(raw []byte) (string, error) {
	top, err := readHF(raw, true)
	if err != nil {
		return "", fmt.Errorf("model config: %w", err)
	}
	cfg := top.languageModel()
	parts := sizeParts(cfg)
	if q := cfg.Quantization; q != nil {
		parts = append(parts, quantSummary(q))
	} else if cfg.TorchDtype != "" {
		parts = append(parts, cfg.TorchDtype)
	}
	typ := cfg.ModelType
	if typ == "" {
		typ = top.ModelType
	}
	if typ == "" && len(parts) == 0 {
		return "", errors.New("model config: no model_type and no known size fields")
	}
	if typ == "" {
		typ = "model"
	}
	if len(parts) == 0 {
		return typ, nil
	}
	return typ + ": " + strings.Join(parts, ", "), nil
}

// sizeParts describes the model's sizes: layers, hidden size, heads,
// experts and vocabulary, each when the config gives it.
func sizeParts(cfg hfConfig) []string {
	var parts []string
	if n := first(cfg.Layers, cfg.NLayer, cfg.NumLayers); n > 0 {
		parts = append(parts, fmt.Sprintf("%d layers", n))
	}
	if n := first(cfg.Hidden, cfg.DModel, cfg.NEmbd); n > 0 {
		parts = append(parts, fmt.Sprintf("hidden %d", n))
	}
	if n := first(cfg.Heads, cfg.NHead); n > 0 {
		h := fmt.Sprintf("%d heads", n)
		if kv := first(cfg.KVHeads); kv > 0 && kv != n {
			h += fmt.Sprintf(" (%d KV)", kv)
		}
		if first(cfg.KVLoraRank) > 0 {
			h += " MLA"
		}
		parts = append(parts, h)
	}
	if e := first(cfg.NRoutedExperts, cfg.NumExperts, cfg.NumLocalExperts); e > 0 {
		var extra []string
		if k := first(cfg.TopK, cfg.MoETopK); k > 0 {
			extra = append(extra, fmt.Sprintf("%d active", k))
		}
		if s := first(cfg.NSharedExperts, cfg.NumShared); s > 0 {
			extra = append(extra, fmt.Sprintf("%d shared", s))
		}
		m := fmt.Sprintf("MoE %d experts", e)
		if len(extra) > 0 {
			m += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, m)
	}
	if n := first(cfg.Vocab); n > 0 {
		parts = append(parts, fmt.Sprintf("vocab %d", n))
	}
	return parts
}

// quantSummary names a quantization_config: method, bits, group size.
func quantSummary(q *hfQuant) string {
	s := q.Method
	if s == "" {
		s = "quantized"
	}
	bits, group := firstOf(q.Bits, q.WBit), firstOf(q.GroupSize, q.QGroupSize)
	typ := "int"
	keys := make([]string, 0, len(q.ConfigGroups))
	for k := range q.ConfigGroups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := q.ConfigGroups[k].Weights
		if w == nil {
			continue
		}
		if b := firstOf(w.NumBits); b > 0 {
			bits = b
		}
		if gs := firstOf(w.GroupSize); gs > 0 {
			group = gs
		}
		if w.Type != "" {
			typ = w.Type
		}
		break
	}
	if q.Fmt != "" { // fp8 configs
		s += " " + q.Fmt
	}
	if bits > 0 {
		s += fmt.Sprintf(" %s%d", typ, bits)
	}
	if group > 0 {
		s += fmt.Sprintf(" g%d", group)
	}
	return s
}

// maxSize bounds the figures a summary shows: a larger one is not a size.
const maxSize = 1e12

// first returns the first of the fields that holds a plausible size.
func first(fields ...*int) int {
	for _, p := range fields {
		if p != nil && *p > 0 && *p < maxSize {
			return *p
		}
	}
	return 0
}

// firstOf is first over plain values (zero where the config has none).
func firstOf(vals ...int) int {
	for _, v := range vals {
		if v > 0 && v < maxSize {
			return v
		}
	}
	return 0
}

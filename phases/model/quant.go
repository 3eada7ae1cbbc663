package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Quant is the weight quantization a config declares. The plan labels each
// GEMM with the dtype its weight is served in; the micro script times those
// with the engine's own kernels when it can import them, and in BF16 (an
// upper bound on their time) when it cannot.
type Quant struct {
	Method    string   `json:"method,omitempty"` // compressed-tensors, fp8, awq, gptq, ...
	Weight    string   `json:"weight,omitempty"` // int4, int8, fp8 ("" when unknown)
	GroupSize int      `json:"group_size,omitempty"`
	Ignore    []string `json:"ignore,omitempty"` // module names or "re:" patterns left unquantized
	// Raw is the config's quantization_config as written; the plan hands
	// it to the micro script, which builds the engine's quantized linear
	// layers from it.
	Raw json.RawMessage `json:"-"`

	patterns map[string]*regexp.Regexp // the compiled "re:" entries of Ignore
}

// hfQuant is a config.json's quantization_config, as readHF decodes it.
type hfQuant struct {
	Method       string   `json:"quant_method"`
	Bits         int      `json:"bits"`
	GroupSize    int      `json:"group_size"`
	Ignore       []string `json:"ignore"`
	NotConvert   []string `json:"modules_to_not_convert"`
	ConfigGroups map[string]struct {
		Weights *hfQuantWeights `json:"weights"`
	} `json:"config_groups"`
	// AWQ's older names for bits and group size, and fp8's format:
	// described by Summarize.
	WBit       int    `json:"w_bit"`
	QGroupSize int    `json:"q_group_size"`
	Fmt        string `json:"fmt"`

	raw json.RawMessage // the object as written, kept for the plan
}

// hfQuantWeights is one compressed-tensors group's weights.
type hfQuantWeights struct {
	NumBits   int    `json:"num_bits"`
	Type      string `json:"type"`
	GroupSize int    `json:"group_size"`
}

func parseQuant(hq *hfQuant) (Quant, error) {
	if hq == nil {
		return Quant{}, nil
	}
	h := *hq
	q := Quant{Method: h.Method, GroupSize: h.GroupSize, Raw: append(json.RawMessage(nil), h.raw...)}
	q.Ignore = append(append(q.Ignore, h.Ignore...), h.NotConvert...)
	switch strings.ToLower(h.Method) {
	case "fp8":
		q.Weight = "fp8"
	case "awq", "gptq", "marlin", "awq_marlin", "gptq_marlin":
		q.Weight = intType(h.Bits)
	case "compressed-tensors":
		for _, g := range h.ConfigGroups {
			if g.Weights == nil {
				continue
			}
			w := *g.Weights
			if w.Type == "float" && w.NumBits == 8 {
				q.Weight = "fp8"
			} else if w.NumBits > 0 {
				q.Weight = intType(w.NumBits)
			}
			if w.GroupSize > 0 {
				q.GroupSize = w.GroupSize
			}
		}
	}
	for _, e := range q.Ignore {
		if p, ok := strings.CutPrefix(e, "re:"); ok {
			re, err := regexp.Compile("^(?:" + p + ")")
			if err != nil {
				return Quant{}, fmt.Errorf("quantization_config: ignore pattern %q: %w", e, err)
			}
			if q.patterns == nil {
				q.patterns = map[string]*regexp.Regexp{}
			}
			q.patterns[e] = re
		}
	}
	return q, nil
}

func intType(bits int) string {
	if bits <= 0 {
		return ""
	}
	return fmt.Sprintf("int%d", bits)
}

// Served returns the dtype module's weight is served in when it differs from
// BF16 ("" for BF16). module is the Hugging Face parameter path without
// ".weight", e.g. "model.layers.1.mlp.experts.0.down_proj". Routers and
// lm_head stay BF16 under every method the plan knows, as they do in vLLM;
// so does a product with no module ("": one the engine runs on BF16 copies
// it makes when it loads the weights).
func (q Quant) Served(module string) string {
	if q.Weight == "" || module == "" || module == "lm_head" || strings.HasSuffix(module, ".mlp.gate") {
		return ""
	}
	for _, e := range q.Ignore {
		if p, ok := strings.CutPrefix(e, "re:"); ok {
			re := q.patterns[e]
			if re == nil {
				re, _ = regexp.Compile("^(?:" + p + ")")
			}
			if re != nil && re.MatchString(module) {
				return ""
			}
			continue
		}
		if module == e || strings.HasSuffix(module, "."+e) {
			return ""
		}
	}
	return q.Weight
}

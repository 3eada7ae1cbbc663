package servermetrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// A figure whose series is absent is null in the JSON, never 0; the
// request counter is summed over finish reasons; the prompt-length
// histogram's sum stands in for an absent prompt-token counter.
func TestAbsentIsNullAndCounters(t *testing.T) {
	text := `vllm:request_success_total{finished_reason="stop",model_name="m"} 3810.0
vllm:request_success_total{finished_reason="length",model_name="m"} 108.0
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_sum{model_name="a"} 5.0
vllm:request_prompt_tokens_sum{model_name="b"} 10.0
vllm:request_prompt_tokens_count{model_name="a"} 1.0
vllm:request_prompt_tokens_count{model_name="b"} 1.0
`
	snap, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(FiguresOf("x", snap))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["requests_total"] != 3918.0 || m["prompt_tokens_total"] != 15.0 || m["prompt_tokens_metric"] != "vllm:request_prompt_tokens_sum" {
		t.Errorf("counters: %s", b)
	}
	for _, k := range []string{"running", "waiting", "kv_cache_usage", "generation_tokens_total"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "kimi-k2.5-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Summarize(b)
	if err != nil {
		t.Fatal(err)
	}
	want := "kimi_k2: 61 layers, hidden 7168, 64 heads MLA, MoE 384 experts (8 active, 1 shared), vocab 163840, compressed-tensors int4 g32"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	got, _ = Summarize([]byte(`{"model_type":"llama","num_hidden_layers":126,"hidden_size":16384,"num_attention_heads":128,"num_key_value_heads":8,"vocab_size":128256,"torch_dtype":"bfloat16"}`))
	if got != "llama: 126 layers, hidden 16384, 128 heads (8 KV), vocab 128256, bfloat16" {
		t.Fatalf("llama: %q", got)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"hidden_size":"x"}`} {
		if _, err := Summarize([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzSummarize(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "kimi-k2.5-config.json"))
	f.Add(b)
	f.Add([]byte(`{"quantization_config":{"config_groups":{"a":{"weights":{"num_bits":1e300}}}}}`))
	f.Add([]byte(`{"text_config":5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Summarize(data)
		if err == nil && s == "" {
			t.Fatal("empty summary without an error")
		}
	})
}

// One decoder, two readings: Parse refuses what Summarize describes around.
func TestStrictAndLenientReadings(t *testing.T) {
	full := `"hidden_size":4096,"num_attention_heads":32,"vocab_size":32000,"intermediate_size":11008`
	for _, c := range []struct {
		name, json string
		parseErr   string // "" when Parse reads it
		summary    string // "" when Summarize errors
	}{
		{"complete", `{"model_type":"llama","num_hidden_layers":4,` + full + `}`,
			"", "llama: 4 layers, hidden 4096, 32 heads, vocab 32000"},
		{"missing fields", `{"model_type":"llama","num_hidden_layers":4}`,
			"missing hidden_size, num_attention_heads, vocab_size", "llama: 4 layers"},
		{"a field of the wrong type", `{"model_type":"llama","num_hidden_layers":"four",` + full + `}`,
			"not a JSON config.json", "llama: hidden 4096, 32 heads, vocab 32000"},
		{"text_config not an object", `{"model_type":"kimi","text_config":5,"num_hidden_layers":4,` + full + `}`,
			"text_config", "kimi: 4 layers, hidden 4096, 32 heads, vocab 32000"},
		{"quantization_config not an object", `{"model_type":"llama","num_hidden_layers":4,"quantization_config":"fp8",` + full + `}`,
			"quantization_config", "llama: 4 layers, hidden 4096, 32 heads, vocab 32000"},
		{"not JSON", `{"model_type":"llama","num_hidden_layers":`, "not a JSON config.json", ""},
	} {
		_, err := Parse("m", []byte(c.json))
		if c.parseErr == "" && err != nil || c.parseErr != "" && (err == nil || !strings.Contains(err.Error(), c.parseErr)) {
			t.Errorf("%s: Parse error %v, want %q", c.name, err, c.parseErr)
		}
		got, err := Summarize([]byte(c.json))
		if c.summary == "" && err == nil || c.summary != "" && got != c.summary {
			t.Errorf("%s: Summarize %q (%v), want %q", c.name, got, err, c.summary)
		}
	}
}

package model

import (
	"os"
	"path/filepath"
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

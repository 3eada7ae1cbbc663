package smi

import (
	"os"
	"testing"
)

func BenchmarkParseTable(b *testing.B) {
	data, err := os.ReadFile("testdata/nvidia-smi-01-h200x8-570-vllm-enginecore.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Parse(string(data), nil)
	}
}

// BenchmarkParseQuery is the once-a-second poll of eight GPUs.
func BenchmarkParseQuery(b *testing.B) {
	text := "0, NVIDIA H200, 77620, 143771, 100\n1, NVIDIA H200, 77620, 143771, 100\n2, NVIDIA H200, 77620, 143771, 100\n3, NVIDIA H200, 77620, 143771, 100\n" +
		"4, NVIDIA H200, 77620, 143771, 100\n5, NVIDIA H200, 77620, 143771, 100\n6, NVIDIA H200, 77620, 143771, 100\n7, NVIDIA H200, 77620, 143771, 100\n"
	for b.Loop() {
		if len(ParseQuery(text)) != 8 {
			b.Fatal("parse")
		}
	}
}

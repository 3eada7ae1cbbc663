package vllmlog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParser parses every fixture back to back (about 70 KB of real
// startup logs of all eras), reporting MB/s.
func BenchmarkParser(b *testing.B) {
	files, _ := filepath.Glob("testdata/*.txt")
	var all bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		all.Write(data)
	}
	data := all.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p := New()
		s := NewSummary()
		for _, r := range p.Write(data) {
			s.Add(r)
		}
	}
}

package sglanglog_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

// BenchmarkAuto parses the corpus's SGLang logs back to back through the
// parser that tells the engine by itself, reporting MB/s.
func BenchmarkAuto(b *testing.B) {
	files, _ := filepath.Glob("../testdata/corpus/*/g*.txt")
	var all bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		all.Write(data)
	}
	all.WriteString(startup)
	data := all.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p := enginelog.New(enginelog.Auto)
		s := vllmlog.NewSummary()
		for _, r := range p.Write(data) {
			s.Add(r)
		}
	}
}

// A log naming 20,000 ranks keeps its ranks bounded.
func TestRanksBounded(t *testing.T) {
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, "[2025-01-01 00:00:00 TP%d DP%d] Load weight begin. avail mem=1 GB\n", i%10, i)
	}
	s, err := enginelog.Read(&b)
	if err != nil || len(s.Ranks) > 4096 {
		t.Fatalf("%d ranks, %v; want at most 4096", len(s.Ranks), err)
	}
}

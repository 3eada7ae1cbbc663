package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDeltaPct(t *testing.T) {
	if p, ok := DeltaPct(12.5, 6.25); !ok || p != -50 {
		t.Fatal(p)
	}
	if _, ok := DeltaPct(0, 3); ok {
		t.Fatal("percentage of zero")
	}
	if p, _ := DeltaPct(-2, -1); p != 50 {
		t.Fatal(p)
	}
}

func FuzzParseSweep(f *testing.F) {
	f.Add([]byte(`{"levels":[{"concurrency":1,"median_tpot_ms":12.5}],"plateau":{"concurrency":1}}`))
	f.Add(mustReadF(f, filepath.Join("testdata", "seed.jsonl")))
	f.Add([]byte(`{"levels":null}`))
	f.Add([]byte("\x00\x01garbage\n" + strings.Repeat("{\n", 50)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSweep("x", data, 0)
		if err == nil {
			if len(s.Levels) == 0 {
				t.Fatal("a sweep with no levels")
			}
			var b bytes.Buffer
			WriteComparison(&b, s, s)
		}
	})
}

func mustReadF(f *testing.F, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

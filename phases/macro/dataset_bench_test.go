package macro

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkShareGPT reads a ShareGPT list of 10,000 conversations keeping a
// sample of 1,000: bytes per second, and memory per read.
func BenchmarkShareGPT(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i := range 10000 {
		if i > 0 {
			buf.WriteString(",\n")
		}
		fmt.Fprintf(&buf, `{"id": "c%d", "conversations": [{"from": "human", "value": %q}, {"from": "gpt", "value": %q}]}`,
			i, strings.Repeat("what is the plateau ", 10+i%40), strings.Repeat("the step grows with the batch ", 20+i%60))
	}
	buf.WriteString("]")
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ds := &dataset{rng: rand.New(rand.NewPCG(1, 1))}
		if err := ds.readShareGPT(bytes.NewReader(data), "bench", 1000); err != nil || len(ds.items) != 1000 {
			b.Fatal(err, len(ds.items))
		}
	}
}

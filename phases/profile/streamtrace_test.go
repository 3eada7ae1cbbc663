package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote/local"
)

// A trace written on one long line reaches the parser whole when it is read
// on the host: the host delivers a line longer than local.MaxLine in pieces,
// and a piece boundary that falls inside a kernel's name must not change it.
func TestStreamTraceOneLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	name := "ncclDevKernel_AllReduce_Sum_bf16_RING_LL_" + strings.Repeat("x", 200)
	for i := 0; b.Len() < 3*local.MaxLine; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":%d,"dur":10}`, name, i*20)
	}
	b.WriteString(`]}`)
	trace := b.String()
	// The cut at MaxLine must fall inside a name for the test to mean anything.
	if at := strings.LastIndex(trace[:local.MaxLine], `"name":"`); at < 0 || local.MaxLine-at > len(name) {
		t.Fatalf("the first cut falls outside a name (at %d)", at)
	}
	file := filepath.Join(t.TempDir(), "one-line.pt.trace.json")
	if err := os.WriteFile(file, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := parseTrace(strings.NewReader(trace), 5, MaxTraceBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamTrace(context.Background(), Config{Host: local.New(), Top: 5}, file)
	if err != nil {
		t.Fatalf("read on the host: %v", err)
	}
	if got.TotalCUDAUs != want.TotalCUDAUs || len(got.Top) != 1 || got.Top[0].Name != name {
		t.Fatalf("host read %v µs %+v, want %v µs", got.TotalCUDAUs, got.Top, want.TotalCUDAUs)
	}
}

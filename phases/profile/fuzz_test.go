package profile

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"
)

func seedFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 6<<10 {
			b = b[:6<<10]
		}
		f.Add(b)
	}
}

// FuzzParseTable: any text gives a summary or an error, never a panic, and
// a summary's categories add up to its total.
func FuzzParseTable(f *testing.F) {
	seedFiles(f, "key_averages.txt", "key_averages_top15.txt", "torch-profiler-01-key-averages-h200.txt", "vllm-profiler-01-endpoints-and-log-lines.txt")
	f.Add([]byte("----  ----\nName  Self CPU\n"))
	f.Add([]byte("-----  -----  -----  -----  -----\n Name  Self CPU  CPU total  Self CUDA  # of Calls\n-----  -----  -----  -----  -----\n    k   0.000us    0.000us      1e308s  3\n-----  -----  -----  -----  -----\nSelf CUDA time total: NaNus\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseTable(bytes.NewReader(b))
		if err != nil {
			return
		}
		sum := 0.0
		for _, v := range s.Categories {
			sum += v
		}
		if d := sum - s.TotalCUDAUs; d > 1e-3*s.TotalCUDAUs+0.01 || d < -1e-3*s.TotalCUDAUs-0.01 {
			t.Fatalf("categories sum to %v, total %v", sum, s.TotalCUDAUs)
		}
		if s.CommunicationShare < 0 || s.CommunicationShare > 1.000001 {
			t.Fatalf("communication share %v", s.CommunicationShare)
		}
	})
}

// FuzzParseTrace: any bytes (plain or gzipped) give a summary or an error.
func FuzzParseTrace(f *testing.F) {
	b, err := os.ReadFile("testdata/trace.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:6<<10])
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL","dur":12.5},{"ph":"X","cat":"kernel","name":"nvjet","dur":"7"}]}`))
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"k","dur":1e400}]`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}]},"traceEvents":[{"ph":"X","cat":"gpu_memcpy","name":"Memcpy","dur":-3}],"z":1}`))
	// Hostile shapes: deep nesting, a long number, a long run of spaces.
	f.Add([]byte(`{"traceEvents":[{"args":` + strings.Repeat("[", 200) + `]}]}`))
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"k","dur":` + strings.Repeat("9", 400) + `}]`))
	f.Add([]byte(`{"traceEvents":[` + strings.Repeat(" ", 4096) + `{"ph":"X","cat":"kernel","name":"k","dur":1}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"\u0000\"` + strings.Repeat("\\", 100) + `","dur":1}]}`))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"fused_moe_kernel","dur":3}]}`))
	zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseTrace(bytes.NewReader(b))
		if err != nil {
			return
		}
		if s.TotalCUDAUs < 0 || s.CommunicationShare < 0 || s.CommunicationShare > 1.000001 {
			t.Fatalf("bad summary %+v", s)
		}
	})
}

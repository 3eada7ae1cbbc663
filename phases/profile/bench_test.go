package profile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"testing"
)

// bigTrace builds a Chrome trace of n kernel events (plus as many CPU-side
// events, as torch writes them), about 420 bytes an event pair.
func bigTrace(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": [` + "\n")
	names := []string{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "fused_moe_kernel",
		"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)"}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 418, "tid": 418, "ts": %d.5, "dur": 4.1, "args": {"External id": %d, "cbid": 211, "correlation": %d}},`+"\n", 1000+i*10, i, i)
		fmt.Fprintf(&b, `  {"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %d.25, "dur": %d.125, "args": {"External id": %d, "device": 0, "stream": 7, "correlation": %d, "grid": [132, 1, 1], "block": [384, 1, 1]}}`, names[i%len(names)], 1003+i*10, 3+i%40, i, i)
	}
	b.WriteString("\n], \"traceName\": \"bench\"}\n")
	return b.Bytes()
}

// BenchmarkParseTrace streams a ~90 MB trace; allocations stay far below
// the trace's size because events are decoded one at a time.
func BenchmarkParseTrace(b *testing.B) {
	benchRead(b, bigTrace(benchEvents), func(r io.Reader) error {
		s, err := ParseTrace(r)
		if err == nil && s.KernelCount != 4 {
			err = fmt.Errorf("%d kernels, want 4: %+v", s.KernelCount, s)
		}
		return err
	})
}

// benchEvents is the kernel events of the benchmarks' trace (~90 MB).
const benchEvents = 200_000

// benchRead times read over data, reported per byte of data.
func benchRead(b *testing.B, data []byte, read func(io.Reader) error) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTraceGzip is the same trace gzipped, read from a file the
// way the capture reads a small one.
func BenchmarkParseTraceGzip(b *testing.B) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	raw := bigTrace(benchEvents)
	zw.Write(raw)
	zw.Close()
	f, err := os.CreateTemp(b.TempDir(), "trace-*.json.gz")
	if err != nil {
		b.Fatal(err)
	}
	f.Write(gz.Bytes())
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Seek(0, io.SeekStart)
		if _, err := ParseTrace(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTable reads the real 59-row H200 table.
func BenchmarkParseTable(b *testing.B) {
	data, err := os.ReadFile("testdata/key_averages.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseTable(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTraceGuard is the cost of the limits alone: the same ~90 MB
// trace read through the guard into nothing.
func BenchmarkTraceGuard(b *testing.B) {
	benchRead(b, bigTrace(benchEvents), func(r io.Reader) error {
		_, err := io.Copy(io.Discard, newGuard(r, MaxTraceBytes))
		return err
	})
}

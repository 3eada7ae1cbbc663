package profile

import (
	"math"
	"os"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// The H200 table (torch 2.11): device kernels sum exactly to the footer's
// 785.787 µs; the decode_step GPU annotation (9.599 ms, 1221%) and the aten
// operators are left out.
func TestParseTableH200Full(t *testing.T) {
	s, err := ParseTable(open(t, "key_averages.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TotalCUDAUs, 785.787) {
		t.Errorf("total = %v, want 785.787", s.TotalCUDAUs)
	}
	if s.UnlistedUs != 0 {
		t.Errorf("unlisted = %v, want 0 (every kernel row is in the full table)", s.UnlistedUs)
	}
	sum := 0.0
	for _, v := range s.Categories {
		sum += v
	}
	if !near(sum, s.TotalCUDAUs) {
		t.Errorf("categories sum to %v, total %v", sum, s.TotalCUDAUs)
	}
	for _, k := range s.Top {
		if strings.HasPrefix(k.Name, "aten::") || k.Name == "decode_step" || k.Name == "Activity Buffer Request" {
			t.Errorf("non-kernel row in top: %+v", k)
		}
	}
	if s.Top[0].Name != "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT" || !near(s.Top[0].SelfCUDAUs, 191.169) || s.Top[0].Calls != 18 || s.Top[0].Category != CatGEMM {
		t.Errorf("top[0] = %+v", s.Top[0])
	}
	if len(s.Top) != TopN {
		t.Errorf("top has %d kernels, want %d", len(s.Top), TopN)
	}
	// GEMM: the four nvjet kernels and the cuBLASLt split-K reduce.
	if want := 191.169 + 71.871 + 57.025 + 28.896 + 22.977; !near(s.Categories[CatGEMM], want) {
		t.Errorf("gemm = %v, want %v", s.Categories[CatGEMM], want)
	}
	if !near(s.Categories[CatAttention], 125.536) {
		t.Errorf("attention = %v, want 125.536 (cuDNN SDPA)", s.Categories[CatAttention])
	}
	if !near(s.Categories[CatMoE], 51.201) {
		t.Errorf("moe = %v, want 51.201 (router top-k)", s.Categories[CatMoE])
	}
	if s.Categories[CatCommunication] != 0 || s.CommunicationShare != 0 {
		t.Errorf("communication = %v (gloo all_reduce runs on the CPU, no device kernel)", s.Categories[CatCommunication])
	}
}

// The same profile with row_limit=15: the footer total stays, the cut rows
// count as other.
func TestParseTableH200RowLimit(t *testing.T) {
	s, err := ParseTable(open(t, "key_averages_top15.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TotalCUDAUs, 785.787) {
		t.Errorf("total = %v, want the footer's 785.787", s.TotalCUDAUs)
	}
	listed := 191.169 + 125.536 + 71.871 + 57.025 + 51.201 + 37.600 + 31.773
	if !near(s.UnlistedUs, 785.787-listed) {
		t.Errorf("unlisted = %v, want %v", s.UnlistedUs, 785.787-listed)
	}
	for _, k := range s.Top {
		if k.Name == "decode_step" {
			t.Errorf("the GPU annotation row (longer than the whole device time) counted as a kernel")
		}
	}
}

// The shared fixture (torch 2.11, one linear and a softmax).
func TestParseTableFixture(t *testing.T) {
	s, err := ParseTable(open(t, "torch-profiler-01-key-averages-h200.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TotalCUDAUs, 349.274) || s.UnlistedUs != 0 {
		t.Errorf("total = %v unlisted = %v, want 349.274 and 0", s.TotalCUDAUs, s.UnlistedUs)
	}
	if !near(s.Categories[CatGEMM], 175.613+48.960) {
		t.Errorf("gemm = %v", s.Categories[CatGEMM])
	}
	if len(s.Top) != 4 {
		t.Errorf("want 4 kernels, got %+v", s.Top)
	}
}

// The trace of the same run as key_averages.txt: kernels and memcpys sum to
// the table's footer, plain and gzipped.
func TestParseTraceH200(t *testing.T) {
	for _, name := range []string{"trace.json", "trace.json.gz"} {
		s, err := ParseTrace(open(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !near(s.TotalCUDAUs, 785.787) {
			t.Errorf("%s: total = %v, want 785.787 (as the table's footer)", name, s.TotalCUDAUs)
		}
		if !near(s.Categories[CatAttention], 125.536) {
			t.Errorf("%s: attention = %v", name, s.Categories[CatAttention])
		}
		if s.Top[0].Category != CatGEMM || s.Top[0].Calls != 18 {
			t.Errorf("%s: top[0] = %+v", name, s.Top[0])
		}
	}
}

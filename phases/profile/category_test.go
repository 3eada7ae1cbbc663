package profile

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestCategory(t *testing.T) {
	cases := map[string]string{
		// Communication (names from formats.md and gpu-phases.md).
		"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": CatCommunication,
		"ncclKernel_AllReduce_RING_LL_Sum___nv_bfloat16(ncclD...":                    CatCommunication,
		"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)":               CatCommunication,
		"void vllm::cross_device_reduce_2stage<float, 8>(...)":                       CatCommunication,
		"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)":          CatCommunication,
		"void deep_ep::intranode::dispatch<8, 768, 8192>(...)":                       CatCommunication,
		// MoE.
		"fused_moe_kernel": CatMoE,
		"void vllm::moe::moe_align_block_size_kernel<int>(int const*, ...)": CatMoE,
		"void vllm::moe::topkGatingSoftmax<8, 256, 4, 16>(...)":             CatMoE,
		// Attention, including CUTLASS-based FlashAttention and MLA.
		"void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64>>(Flash_fwd_mla_params)": CatAttention,
		"void flash::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 64>(Flash_fwd_mla_params)":  CatAttention,
		"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wm...":                                              CatAttention,
		"void vllm::concat_and_cache_mla_kernel<__nv_bfloat16>(...)":                                           CatAttention,
		"void flashinfer::BatchDecodeWithPagedKVCacheKernel<...>(...)":                                         CatAttention,
		// GEMM.
		"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT":                                      CatGEMM,
		"void cublasLt::splitKreduce_kernel<32, 16, int, floa...":                     CatGEMM,
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64":                 CatGEMM,
		"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16>": CatGEMM,
		// Other.
		"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)":                CatOther,
		"Memcpy DtoH (Device -> Pageable)":                                           CatOther,
		"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(...)": CatOther,
		"void vllm::rms_norm_kernel<c10::BFloat16>(...)":                             CatOther,
	}
	for name, want := range cases {
		if got := Category(name); got != want {
			t.Errorf("Category(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestShorten(t *testing.T) {
	cases := []struct {
		in   string
		w    int
		want string
	}{
		{"fused_moe_kernel", 40, "fused_moe_kernel"},
		{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*)", 45, "vllm::moe::moe_align_block_size_kernel<int>"},
		{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, int)", 30, "vllm::act_and_mul_kernel<…>"},
		{"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", 10, "nvjet_sm9…"},
	}
	for _, c := range cases {
		if got := Shorten(c.in, c.w); got != c.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
		if n := len([]rune(Shorten(c.in, c.w))); n > c.w {
			t.Errorf("Shorten(%q, %d) is %d runes", c.in, c.w, n)
		}
	}
}

// A table logged row by row behind vLLM's logger prefix reads the same as
// the plain one.
func TestParseTableLogPrefixed(t *testing.T) {
	b, err := os.ReadFile("testdata/key_averages.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lb strings.Builder
	lb.WriteString("(APIServer pid=44500) INFO 11-05 13:22:40 [api_server.py:964] Stopping profiler...\n")
	for _, l := range strings.Split(string(b), "\n") {
		lb.WriteString("(EngineCore_DP0 pid=44565) INFO 11-05 13:22:49 [cpu_worker.py:210] " + l + "\r\n")
	}
	s, err := ParseTable(strings.NewReader(lb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TotalCUDAUs, 785.787) || !near(s.Categories[CatAttention], 125.536) {
		t.Errorf("total %v attention %v", s.TotalCUDAUs, s.Categories[CatAttention])
	}
}

// Two stops in one log: the last table counts.
func TestParseTableLastOfSeveral(t *testing.T) {
	a, _ := os.ReadFile("testdata/torch-profiler-01-key-averages-h200.txt")
	b, _ := os.ReadFile("testdata/key_averages.txt")
	s, err := ParseTable(bytes.NewReader(append(append(a, '\n'), b...)))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.TotalCUDAUs, 785.787) {
		t.Errorf("total = %v, want the second table's 785.787", s.TotalCUDAUs)
	}
}

// The CPU-only table vLLM logs on CPU backends has no device column: a clear
// error, not an empty summary.
func TestParseTableNoDeviceColumn(t *testing.T) {
	_, err := ParseTable(open(t, "vllm-profiler-01-endpoints-and-log-lines.txt"))
	if err == nil || !strings.Contains(err.Error(), "Self CUDA") {
		t.Errorf("err = %v, want one that names the missing Self CUDA column", err)
	}
}

func TestParseTraceErrors(t *testing.T) {
	cases := map[string]string{
		"":                           "not JSON",
		`{"traceEvents": [{"ph":"X"`: "event 1",
		`{"other": 1}`:               "no traceEvents",
		`{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::mm","dur":3}]}`: "no device kernels",
		`"just a string"`: "want a JSON object",
	}
	for in, want := range cases {
		_, err := ParseTrace(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTrace(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

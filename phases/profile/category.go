package profile

import "strings"

// The categories a device kernel falls into.
const (
	CatGEMM          = "gemm"
	CatAttention     = "attention"
	CatMoE           = "moe"
	CatCommunication = "communication"
	CatOther         = "other"
)

// Categories lists the categories in display order.
var Categories = []string{CatGEMM, CatAttention, CatMoE, CatCommunication, CatOther}

// Name fragments (lower case) for each category, tried in the order of
// categoryRules: communication first (NCCL and custom all-reduce kernels),
// then MoE (fused MoE kernels do GEMMs but belong to the MoE layer), then
// attention (FlashAttention kernels are CUTLASS-based), then GEMM.
var categoryRules = []struct {
	cat   string
	frags []string
}{
	{CatCommunication, []string{
		"nccl", "allreduce", "all_reduce", "cross_device_reduce", "custom_ar", "quickreduce",
		"allgather", "all_gather", "reducescatter", "reduce_scatter", "alltoall", "all_to_all",
		"deep_ep", "deepep", "intranode::", "internode::", "moe_dispatch", "moe_combine",
		"symm_mem", "multimem", "pplx",
	}},
	{CatMoE, []string{
		"moe", "expert", "topk", "top_k", "router", "grouped_gemm", "groupproblemshape", "m_grouped",
	}},
	{CatAttention, []string{
		"attn", "attention", "flash", "fmha", "mha_", "_mla", "mla_", "mla::", "sdpa", "paged", "flashinfer",
		"reshape_and_cache", "concat_and_cache", "xformers", "decodewith", "prefillwith",
		"_fwd_kernel_stage", "_fwd_grouped_kernel",
	}},
	{CatGEMM, []string{
		"gemm", "gemv", "nvjet", "cutlass", "cublas", "xmma", "matmul", "wgmma", "splitkreduce",
		"scaled_mm", "_mm_", "marlin", "s16816", "s1688", "hgemm", "sgemm",
	}},
}

// Category returns the category of a device kernel from its name.
func Category(name string) string {
	n := strings.ToLower(name)
	for _, r := range categoryRules {
		for _, f := range r.frags {
			if strings.Contains(n, f) {
				return r.cat
			}
		}
	}
	return CatOther
}

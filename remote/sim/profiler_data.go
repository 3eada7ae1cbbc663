package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"time"
)

// simKernel is one device kernel of a simulated decode step of Kimi-K2.5
// (61 layers, 60 of them MoE, MLA attention) at TP8 on H200, with CUDA
// graphs: calls per step, µs per call with one token per step, and how much
// a call grows per further token in the step (relative).
type simKernel struct {
	name  string
	calls int
	us    float64
	slope float64
	group string // which part of the step model it belongs to
}

// The kernel groups, as the profile's categories book them.
const (
	groupComm      = "comm"
	groupGEMM      = "gemm"
	groupMoEGEMM   = "moe_gemm" // the experts' GEMMs (and quantized dense ones)
	groupMoE       = "moe"      // routing: align, top-k, sum
	groupAttention = "attention"
	groupOther     = "other"
)

// At one token per step the kernels below take about 11.7 ms of a 12.5 ms
// step, and the all-reduces about half of it.
var simKernels = []simKernel{
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 122, 47, 0.004, groupComm},
	{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", 1, 9, 0.004, groupComm},
	{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1, 28, 0.004, groupComm},
	{"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", 61, 7.5, 0.012, groupGEMM},
	{"nvjet_sm90_tst_64x8_64x16_1x1_h_bz_splitK_NNT", 61, 5.2, 0.012, groupGEMM},
	{"nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT", 61, 7.0, 0.012, groupGEMM},
	{"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)", 61, 1.6, 0.01, groupGEMM},
	{"nvjet_sm90_tst_128x16_64x8_1x1_v_bz_TNT", 120, 4.8, 0.012, groupGEMM},
	{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", 122, 3.2, 0.012, groupGEMM},
	{"nvjet_sm90_tst_192x8_64x5_2x1_v_bz_NNT", 1, 38, 0.012, groupGEMM},
	{"void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)", 61, 11, 0.05, groupAttention},
	{"void flash::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 64>(Flash_fwd_mla_params)", 61, 2.2, 0.03, groupAttention},
	{"void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*)", 61, 1.8, 0.02, groupAttention},
	{"fused_moe_kernel", 120, 12, 0.02, groupMoEGEMM},
	{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)", 60, 2.6, 0.01, groupMoE},
	{"void vllm::moe::grouped_topk_fused_kernel<float>(float*, float const*, float*, int*, int, int, int, int, int, bool, double)", 60, 3.2, 0.01, groupMoE},
	{"void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)", 60, 2.0, 0.01, groupMoE},
	{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", 122, 2.4, 0.01, groupOther},
	{"void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", 122, 1.7, 0.01, groupOther},
	{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", 121, 1.9, 0.01, groupOther},
	{"void vllm::rotary_embedding_kernel<c10::BFloat16, false>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", 61, 1.6, 0.01, groupOther},
	{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", 1, 9, 0.02, groupOther},
	{"Memcpy HtoD (Pinned -> Device)", 3, 1.5, 0.005, groupOther},
}

// simProfile is one simulated capture: steps engine steps with tokens
// generated and prompt tokens prefilled in all, its kernels the step
// model's parts at the capture's mean batch.
type simProfile struct {
	steps  int64
	batch  int     // tokens generated per step
	stepUs float64 // the step model's wall time of one step
	tp     int
	wall   time.Duration
	rng    *rand.Rand
	scales []float64 // per kernel: its group's share of the step model's part, and a few % of run-to-run spread
}

func newSimProfile(m *StepModel, steps, tokens, prompt int64, wall time.Duration, seed int64) *simProfile {
	if steps < 0 {
		steps = 0
	}
	p := &simProfile{steps: steps, batch: 1, tp: m.TP(), wall: wall, rng: rand.New(rand.NewSource(seed))}
	prefill := 0.0
	if steps > 0 {
		if tokens > steps {
			p.batch = int(math.Round(float64(tokens) / float64(steps)))
		}
		prefill = m.PrefillMicros(int(prompt / steps))
	}
	p.stepUs = m.Parts(p.batch).Total() + prefill
	targets := m.groupTargets(p.batch, prefill)
	table := tableGroups(p.batch)
	for _, k := range simKernels {
		f := 0.0
		if table[k.group] > 0 {
			f = targets[k.group] / table[k.group]
		}
		p.scales = append(p.scales, f*(1+0.04*(p.rng.Float64()-0.5)))
	}
	return p
}

// callUs is one call of kernel i at this profile's batch (0: the step has
// none, as a TP1 step has no collectives).
func (p *simProfile) callUs(i int) float64 {
	k := simKernels[i]
	return k.us * (1 + k.slope*float64(p.batch-1)) * p.scales[i]
}

type tableRowSim struct {
	name                string
	selfCPU, cpuTotal   float64
	selfCUDA, cudaTotal float64
	calls               int64
}

// table renders rank 0's key_averages().table(sort_by="self_cuda_time_total")
// as torch prints it.
func (p *simProfile) table() string {
	var rows []tableRowSim
	devTotal := 0.0
	memcpy := 0.0
	softmax := 0.0
	for i, k := range simKernels {
		calls := int64(k.calls) * p.steps
		if calls == 0 || p.scales[i] == 0 {
			continue
		}
		us := p.callUs(i) * float64(calls)
		devTotal += us
		switch {
		case strings.HasPrefix(k.name, "Memcpy"):
			memcpy += us
		case strings.Contains(k.name, "SoftMax"):
			softmax += us
		}
		rows = append(rows, tableRowSim{name: k.name, selfCUDA: us, cudaTotal: us, calls: calls})
	}
	s := float64(p.steps)
	if p.steps > 0 {
		stepWall := p.stepUs
		rows = append(rows,
			tableRowSim{name: "execute_model", selfCUDA: stepWall * s, cudaTotal: stepWall * s, calls: p.steps},
			tableRowSim{name: "execute_model", selfCPU: 180 * s, cpuTotal: 650 * s, cudaTotal: devTotal, calls: p.steps},
			tableRowSim{name: "cudaGraphLaunch", selfCPU: 14 * s, cpuTotal: 14 * s, calls: p.steps},
			tableRowSim{name: "aten::copy_", selfCPU: 24 * s, cpuTotal: 61 * s, selfCUDA: memcpy, cudaTotal: memcpy, calls: 3 * p.steps},
			tableRowSim{name: "cudaMemcpyAsync", selfCPU: 27 * s, cpuTotal: 27 * s, calls: 3 * p.steps},
			tableRowSim{name: "aten::_softmax", selfCPU: 11 * s, cpuTotal: 19 * s, selfCUDA: softmax, cudaTotal: softmax, calls: p.steps},
			tableRowSim{name: "aten::softmax", selfCPU: 3 * s, cpuTotal: 22 * s, cudaTotal: softmax, calls: p.steps},
			tableRowSim{name: "cudaLaunchKernel", selfCPU: 9 * s, cpuTotal: 9 * s, calls: p.steps},
		)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].selfCUDA > rows[j].selfCUDA })
	cpuTotal := 0.0
	for _, r := range rows {
		cpuTotal += r.selfCPU
	}
	sep := strings.Repeat("-", 55) + strings.Repeat("  "+strings.Repeat("-", 12), 10) + "  \n"
	var b strings.Builder
	b.WriteString(sep)
	fmt.Fprintf(&b, "%55s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  \n",
		"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls")
	b.WriteString(sep)
	for _, r := range rows {
		name := r.name
		if len(name) > 55 {
			name = name[:52] + "..."
		}
		fmt.Fprintf(&b, "%55s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12s  %12d  \n", name,
			pct(r.selfCPU, cpuTotal), fmtUs(r.selfCPU), pct(r.cpuTotal, cpuTotal), fmtUs(r.cpuTotal), fmtUs(r.cpuTotal/float64(r.calls)),
			fmtUs(r.selfCUDA), pct(r.selfCUDA, devTotal), fmtUs(r.cudaTotal), fmtUs(r.cudaTotal/float64(r.calls)), r.calls)
	}
	b.WriteString(sep)
	fmt.Fprintf(&b, "Self CPU time total: %s\nSelf CUDA time total: %s\n\n", fmtUs(cpuTotal), fmtUs(devTotal))
	return b.String()
}

func pct(v, total float64) string {
	if total <= 0 {
		return "0.00%"
	}
	return fmt.Sprintf("%.2f%%", 100*v/total)
}

// fmtUs formats microseconds as torch's profiler does.
func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.3fms", us/1e3)
	}
	return fmt.Sprintf("%.3fus", us)
}

// trace renders one rank's Chrome trace, gzipped, with the kernels of the
// first two steps only (a real one holds every step; this keeps the demo's
// memory small).
func (p *simProfile) trace(rank int) []byte {
	type ev struct {
		Ph   string         `json:"ph"`
		Cat  string         `json:"cat,omitempty"`
		Name string         `json:"name"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args,omitempty"`
	}
	var evs []ev
	ts := 1.7e12
	steps := p.steps
	if steps > 2 {
		steps = 2
	}
	corr := 1
	for s := int64(0); s < steps; s++ {
		start := ts
		evs = append(evs, ev{Ph: "X", Cat: "cpu_op", Name: "cudaGraphLaunch", Pid: 1000 + rank, Tid: 1, Ts: ts - 20, Dur: 14})
		for i, k := range simKernels {
			if p.scales[i] == 0 {
				continue
			}
			for c := 0; c < k.calls; c++ {
				d := p.callUs(i) * (1 + 0.1*(p.rng.Float64()-0.5))
				if strings.HasPrefix(k.name, "nccl") {
					d *= 1 + 0.05*float64(rank%3) // ranks wait for each other differently
				}
				cat := "kernel"
				if strings.HasPrefix(k.name, "Memcpy") {
					cat = "gpu_memcpy"
				}
				evs = append(evs, ev{Ph: "X", Cat: cat, Name: k.name, Pid: rank, Tid: 7, Ts: ts, Dur: math.Round(d*1000) / 1000,
					Args: map[string]any{"device": rank, "stream": 7, "correlation": corr}})
				corr++
				ts += d + 0.4
			}
		}
		evs = append(evs, ev{Ph: "X", Cat: "gpu_user_annotation", Name: "execute_model", Pid: rank, Tid: 7, Ts: start, Dur: ts - start})
		ts = start + p.stepUs
	}
	// The model runner's CPU-side annotation, once per engine step, for
	// every step of the capture (kernels are written for the first steps
	// only, to keep the simulated traces small; the table has them all).
	step := p.stepUs
	for s := int64(0); s < min(p.steps, 100000); s++ {
		evs = append(evs, ev{Ph: "X", Cat: "user_annotation", Name: "gpu_model_runner: forward", Pid: 1000 + rank, Tid: 1,
			Ts: 1.7e12 + float64(s)*step - 30, Dur: step * 0.9})
	}
	doc := map[string]any{
		"schemaVersion":    1,
		"deviceProperties": []map[string]any{{"id": rank, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0, "numSms": 132}},
		"distributedInfo":  map[string]any{"backend": "nccl", "rank": rank, "world_size": p.tp},
		"traceEvents":      evs,
		"traceName":        fmt.Sprintf("simulated rank %d (kernels of the first %d of %d steps)", rank, steps, p.steps),
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_ = json.NewEncoder(zw).Encode(doc)
	_ = zw.Close()
	return buf.Bytes()
}

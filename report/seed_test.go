package report

import (
	"encoding/json"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func f64(v float64) *float64 { return &v }

// seedEvents is a campaign shaped like the one the tool was built from:
// Kimi-K2.5 at TP8, TPOT 12.4 ms single stream, a plateau at 1,536 tok/s
// from C=128, 123 all-reduces per step, a load that stalled once.
func seedEvents() []phases.Event {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var evs []phases.Event
	add := func(s float64, kind string, d any) { evs = append(evs, phases.New(at(s), kind, d)) }

	add(0, phases.KindSessionStarted, phases.SessionStarted{Campaign: "k25b6000bench1", Host: "gpu1", Notebook: "k25b6000bench1.md", Version: "0.1.0"})
	add(1, phases.KindSessionConn, phases.ConnState{Host: "gpu1", State: "up", RTTms: 0.8})
	add(2, phases.KindSessionSystem, phases.SystemInfo{Host: "gpu1", GPUName: "NVIDIA RTX PRO 6000 Blackwell Server Edition", GPUCount: 8,
		GPUMemoryMiB: 97887, Driver: "580.95.05", CUDA: "13.0", Torch: "2.9.0+cu129", VLLM: "0.12.0",
		LaunchCommand: "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --max-num-batched-tokens 8192 --api-key sk-live-1234",
		Model:         "moonshotai/Kimi-K2.5", ModelSummary: "kimi_k2: 61 layers, hidden 7168, 64 heads, MoE 384 experts (8 active, 1 shared), vocab 163840, compressed-tensors int4 g32"})

	// Load: eight GPUs ramp to 75.8 GiB, stall, restart, ready.
	add(10, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "load"})
	add(11, phases.KindLoadServer, phases.ServerEvent{Action: "start", Detail: "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8"})
	for i := 0; i <= 12; i++ {
		s := phases.GPUSample{Host: "gpu1"}
		for g := 0; g < 8; g++ {
			used := min(float64(i)*7.0+float64(g)*0.1, 75.8) * 1024
			s.GPUs = append(s.GPUs, phases.GPU{Index: g, MemoryUsedMiB: f64(used), MemoryTotalMiB: f64(97887), UtilizationPct: f64(0)})
		}
		add(20+float64(i)*60, phases.KindLoadGPUCoarse, s)
	}
	add(400, phases.KindLoadMilestone, phases.Milestone{Stage: "weights", AtS: 390, Value: "75.8 GiB", Line: "Loading weights took 380.12 seconds"})
	add(800, phases.KindLoadStall, phases.Stall{GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, MemoryGiB: []float64{75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8}, ForS: 300, Line: "Profiler started"})
	add(805, phases.KindNotesNote, phases.Note{Text: "stalled at 75.8 GB per GPU with the torch profiler on; restarting without it", Pane: "Server/Load"})
	add(810, phases.KindLoadServer, phases.ServerEvent{Action: "restart", Detail: "without VLLM_TORCH_PROFILER_DIR"})
	add(1500, phases.KindLoadMilestone, phases.Milestone{Stage: "ready", AtS: 1490, Line: "Application startup complete."})
	add(1501, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "load"})

	// Macro sweep.
	add(1600, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro", Params: map[string]any{"levels": []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, "input_len": 1000, "output_len": 200}})
	type lv struct {
		c               int
		thr, tpot, ttft float64
	}
	lvs := []lv{{1, 78.1, 12.40, 95}, {2, 150.2, 12.9, 101}, {4, 282.5, 13.7, 110}, {8, 510.3, 15.2, 125}, {16, 810.9, 19.1, 150},
		{32, 1120.4, 27.5, 210}, {64, 1390.7, 44.3, 340}, {128, 1536.2, 80.9, 610}, {256, 1561.8, 158.2, 1900}}
	for i, l := range lvs {
		n := max(16, 4*l.c) // at least phases.MinRequests, so every level is quoted
		add(1610+float64(i)*100, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: l.c, Requests: n})
		add(1690+float64(i)*100, phases.KindMacroLevel, phases.LevelResult{
			Concurrency: l.c, Completed: n, Failures: map[string]int{}, DurationS: 80,
			TotalInputTokens: int64(n * 1000), TotalOutputTokens: int64(n * 200),
			RequestThroughput: l.thr / 200, OutputThroughput: l.thr,
			MeanTTFTms: l.ttft * 1.05, MedianTTFTms: l.ttft, P90TTFTms: l.ttft * 1.3, P99TTFTms: l.ttft * 1.6,
			MeanTPOTms: l.tpot * 1.01, MedianTPOTms: l.tpot, P90TPOTms: l.tpot * 1.1, P99TPOTms: l.tpot * 1.25,
			MedianITLms: l.tpot * 0.98, MedianE2ELms: l.ttft + 199*l.tpot, TokenSource: "server usage",
			Server:      &phases.ServerLevel{Available: true, MeanRunning: float64(l.c), MaxKVCacheUsage: float64(l.c) / 300},
			ClientBound: l.c == 256, ClientBoundReason: map[bool]string{true: "send lag p99 180 ms"}[l.c == 256],
			Notes: map[bool][]string{true: {"3 requests ended without usage; their tokens were counted from the stream"}}[l.c == 64],
		})
	}
	add(2500, phases.KindMacroPlateau, phases.Plateau{Concurrency: 128, OutputThroughput: 1536.2})
	add(2505, phases.KindNotesMarker, phases.Marker{Label: "plateau reached", Pane: "Macro"})
	add(2510, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "macro"})

	// Micro: the step's GEMMs at M=1 and M=128.
	add(2600, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "micro"})
	add(2601, phases.KindMicroEnv, phases.GPUEnv{GPU: "NVIDIA RTX PRO 6000 Blackwell Server Edition", Torch: "2.9.0+cu129", CUDA: "12.9"})
	gemm := func(s float64, name string, m, nn, k, per int, us float64) {
		add(s, phases.KindMicroGEMM, phases.GEMMResult{Name: name, Step: 1, M: m, N: nn, K: k, Dtype: "bf16", PerStep: per, Us: us, P20Us: us * 0.98, P80Us: us * 1.03,
			TFLOPs: 2 * float64(m*nn*k) / us / 1e6, GBs: float64(2*nn*k) / us / 1e3, BWPct: float64(2*nn*k) / us / 1e3 / 17.92, StepUs: us * float64(per)})
	}
	gemm(2610, "q_a+kv_a", 1, 2112, 7168, 61, 12.1)
	gemm(2611, "o_proj", 1, 7168, 1024, 61, 6.9)
	gemm(2612, "experts w13", 1, 512, 7168, 480, 3.1)
	gemm(2613, "lm_head", 1, 20480, 7168, 1, 170.0)
	add(2614, phases.KindMicroCalib, phases.Calib{Name: "bf16 8192³", Us: 2750, TFLOPs: 399.8, PeakPct: 80, DoBenchUs: 2741})
	add(2615, phases.KindMicroError, phases.ScriptError{Name: "experts w2", What: "timing", Step: 128, Err: "CUDA out of memory"})
	add(2620, phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3500, BackToBackUs: 3350, Graph: true})
	add(2621, phases.KindMicroStep, phases.GEMMStep{M: 128, SumUs: 41200, BackToBackUs: 40100})
	add(2630, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "micro"})

	// NCCL: the all-reduce burst and All-to-All.
	add(2700, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "nccl"})
	add(2701, phases.KindNCCLEnv, phases.GPUEnv{GPU: "NVIDIA RTX PRO 6000 Blackwell Server Edition", Torch: "2.9.0+cu129", CUDA: "12.9", NProc: 8})
	add(2710, phases.KindNCCLBurst, phases.NCCLBurst{M: 1, Count: 123, Bytes: 14336, TotalMs: 7.011, PerOpUs: 57.0, GraphMs: 6.386, GraphPerOpUs: 51.9, NProc: 8})
	add(2711, phases.KindNCCLBurst, phases.NCCLBurst{M: 128, Count: 123, Bytes: 14336 * 128, TotalMs: 15.99, PerOpUs: 130, NProc: 8})
	for i, us := range []float64{38, 41, 45, 52, 140, 290} {
		t := 1 << i
		add(2720+float64(i), phases.KindNCCLAllToAll, phases.NCCLAllToAll{Tokens: t, Bytes: int64(t) * 114688, Us: us, AlgBW: float64(t) * 114688 / us / 1e3, BusBW: float64(t) * 114688 / us / 1e3 * 7 / 8, NProc: 8})
	}
	add(2730, phases.KindNCCLCliff, phases.NCCLCliff{Tokens: 16, FromUs: 52, ToUs: 140})
	add(2731, phases.KindNotesNote, phases.Note{Text: "custom all-reduce is off on PCIe: every AR goes through PyNCCL", Pane: "NCCL"})
	add(2740, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "nccl"})

	add(2800, phases.KindSessionConn, phases.ConnState{Host: "gpu1", State: "down", Err: "read tcp: connection reset by peer"})
	add(2805, phases.KindSessionConn, phases.ConnState{Host: "gpu1", State: "up", RTTms: 0.9})

	// Profile.
	add(2900, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "profile"})
	add(3000, phases.KindProfileSummary, phases.ProfileSummary{Source: "profiler_out_0.txt", TotalCUDAUs: 1240000,
		Categories: map[string]float64{"communication": 638600, "gemm": 350000, "attention": 120000, "other": 131400}, CommunicationShare: 0.515,
		Top: []phases.Kernel{{Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", SelfCUDAUs: 638600, Calls: 12300, Category: "communication"},
			{Name: "fused_moe_kernel", SelfCUDAUs: 210000, Calls: 6000, Category: "gemm"}}, DecodeSteps: 100,
		DecodeStepsSource: "output tokens from the server's usage", CommPerStepUs: 6386, GPUPerStepUs: 12400, Requests: 8, Concurrency: []int{1}, OutputTokens: 800,
		StopS: 41.5, ProfilerDir: "/tmp/vllm_profile", Notes: []string{"CUDA graphs on: kernels inside graphs are attributed by name from the trace"}})
	add(3001, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "profile"})
	add(3010, phases.KindNotesNote, phases.Note{Text: "AllReduce is about half of decode time | try the FlashInfer PCIe all-reduce next", Pane: "Notes"})
	add(3020, phases.KindSessionError, phases.ErrorEvent{Where: "notebook", Err: "charts: disk full (example)"})
	return evs
}

func jsonLine(ev phases.Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	return append(b, '\n'), err
}

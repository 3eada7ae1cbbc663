package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// One GPU: the NCCL phase found no collectives, so the all-reduce part is
// zero and said so (not missing); a GEMM of weights served as int4 but
// timed in BF16 is an upper bound, kept out of the GEMM part and said.
func TestBudgetOneGPUAndUpperBound(t *testing.T) {
	lv := phases.LevelResult{Concurrency: 1, Completed: 12, MedianTPOTms: 4, MeanTPOTms: 4.2, TotalInputTokens: 12 * 256}
	evs := budgetEvents(
		phases.KindMacroLevel, lv,
		phases.KindNCCLNone, phases.NCCLNone{TP: 1, NProc: 1, Reason: "one process on one GPU (TP 1)"},
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3000},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "experts.w13", M: 8, Step: 1, StepUs: 1000, Served: "int4"},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "q_b", M: 1, StepUs: 2000},
	)
	b := Budget(evs)
	s := b.Single
	if !s.HasAR || s.AllReduceMs != 0 || !strings.Contains(strings.Join(s.Sources, "\n"), "all-reduce: none — one process on one GPU") {
		t.Fatalf("all-reduce: %+v", s)
	}
	if !near(s.GEMMms, 2) || !near(s.UpperBoundMs, 1) || len(s.UpperBound) != 1 || s.UpperBound[0] != "experts.w13" {
		t.Fatalf("GEMM %.3f, upper bound %.3f %v", s.GEMMms, s.UpperBoundMs, s.UpperBound)
	}
	w := s.Whole
	if w == nil || !near(w.TPOTms, 4.2) || !near(w.MedianTPOTms, 4) || !near(w.SumMs, 2) || !near(w.NotAccountedMs, 2.2) {
		t.Fatalf("whole: %+v", w)
	}
	un := strings.Join(w.Unmeasured, "\n")
	for _, want := range []string{"experts.w13): timed in BF16 they take 1.00 ms, an upper bound kept out of the sum",
		"no decode-only profile window at C=1", "the engine's step mix", "scheduling"} {
		if !strings.Contains(un, want) {
			t.Errorf("unmeasured lacks %q:\n%s", want, un)
		}
	}
	if len(b.Levels) != 1 || b.Levels[0].Concurrency != 1 {
		t.Errorf("levels %+v", b.Levels)
	}
}

// Experts timed as served with the engine's own kernels (micro found vLLM's
// fused MoE) are a measurement: they stay in the GEMM part, no upper bound.
func TestBudgetExpertsAsServed(t *testing.T) {
	lv := phases.LevelResult{Concurrency: 1, Completed: 12, MedianTPOTms: 4, MeanTPOTms: 4.2, TotalInputTokens: 12 * 256}
	b := Budget(budgetEvents(
		phases.KindMacroLevel, lv,
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 3000},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "experts.w13", M: 1, Batch: 8, Step: 1, StepUs: 1000, Served: "int4", AsServed: true},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "q_b", M: 1, StepUs: 2000},
	))
	s := b.Single
	if !near(s.GEMMms, 3) || s.UpperBoundMs != 0 || len(s.UpperBound) != 0 {
		t.Fatalf("GEMM %.3f, upper bound %.3f %v", s.GEMMms, s.UpperBoundMs, s.UpperBound)
	}
	if un := strings.Join(s.Whole.Unmeasured, "\n"); strings.Contains(un, "upper bound") {
		t.Errorf("unmeasured says upper bound:\n%s", un)
	}
}

// Quantized linear layers timed as served (micro built vLLM's own layer)
// stay in the GEMM part beside the BF16 ones; routed experts still timed
// in BF16 for want of the engine's fused MoE are the only upper bound.
func TestBudgetLinearAsServed(t *testing.T) {
	lv := phases.LevelResult{Concurrency: 1, Completed: 12, MedianTPOTms: 6, MeanTPOTms: 6.2, TotalInputTokens: 12 * 256}
	b := Budget(budgetEvents(
		phases.KindMacroLevel, lv,
		phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 4500},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "dense.gate_up", M: 1, Step: 1, StepUs: 300, Dtype: "int4", Served: "int4", AsServed: true},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "dense.down", M: 1, Step: 1, StepUs: 200, Dtype: "int4", Served: "int4", AsServed: true},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "experts.w13", M: 1, Batch: 8, Step: 1, StepUs: 1500, Dtype: "bf16", Served: "int4"},
		phases.KindMicroGEMM, phases.GEMMResult{Name: "q_b", M: 1, Step: 1, StepUs: 2500, Dtype: "bf16"},
	))
	s := b.Single
	if !near(s.GEMMms, 3) || !near(s.UpperBoundMs, 1.5) || strings.Join(s.UpperBound, ",") != "experts.w13" {
		t.Fatalf("GEMM %.3f, upper bound %.3f %v", s.GEMMms, s.UpperBoundMs, s.UpperBound)
	}
	src := strings.Join(s.Sources, "\n")
	if !strings.Contains(src, "experts.w13 (weights served as int4) timed in BF16 take 1.50 ms at M=1: an upper bound") || strings.Contains(src, "dense.") {
		t.Errorf("sources:\n%s", src)
	}
}

// The budget's document is snake_case like every other one.
func TestBudgetJSONSnakeCase(t *testing.T) {
	out, err := json.Marshal(Budget(seedEvents()))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, bad := range []string{`"Single"`, `"TPOTms"`, `"HasAR"`, `"AllReduceMs"`, `"Whole"`} {
		if strings.Contains(s, bad) {
			t.Errorf("budget JSON has %s", bad)
		}
	}
	for _, want := range []string{`"single":{`, `"median_tpot_ms":12.4`, `"mean_tpot_ms":12.52`, `"has_allreduce":true`, `"whole":{`, `"parts":[`, `"levels":[`,
		`"headline":"TPOT 12.52 ms mean (median 12.40) = communication 6.39 ms (51.0%)`, `"split":[{"group":"decode step","name":"communication","ms":6.386`,
		`"step":"nccl","run":1,"level":1,"estimate":true}`, `"isolated_allreduce_ms":6.386`} {
		if !strings.Contains(s, want) {
			t.Errorf("budget JSON lacks %s", want)
		}
	}
}

// The level's step mix: with whole prefills between decode steps the
// engine runs one step per prompt besides the decode steps; with chunked
// prefill, none.
func TestDecodeSteps(t *testing.T) {
	sep := phases.StepMix{Steps: 228, DecodeTokens: 128 * 100, PromptTokens: 128 * 256}
	n, mixed := decodeSteps(sep, 128, 256)
	if mixed || !near(n, 100) {
		t.Errorf("separate: %v steps, mixed %v", n, mixed)
	}
	chunk := phases.StepMix{Steps: 101, DecodeTokens: 128 * 100, PromptTokens: 128 * 256}
	if n, mixed := decodeSteps(chunk, 128, 256); !mixed || !near(n, 101) {
		t.Errorf("chunked: %v steps, mixed %v", n, mixed)
	}
}

// A server started just before the load's run is announced belongs to that
// run: the load section shows one run, not a run of one sample over 0 s
// before the real one. Events between two runs wait for the next one.
func TestClassifyEventsBeforeTheRun(t *testing.T) {
	evs := budgetEvents(
		phases.KindLoadServer, phases.ServerEvent{Action: "start", Detail: "pid 1"},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load},
		phases.KindLoadServer, phases.ServerEvent{Action: "ready"},
		phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeDone},
		phases.KindLoadServer, phases.ServerEvent{Action: "restart"},
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load},
		phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeDone},
	)
	runs := classify(evs).runs[phases.Load]
	if len(runs) != 2 || len(runs[0].events) != 2 || len(runs[1].events) != 1 {
		t.Fatalf("%d runs: %+v", len(runs), runs)
	}
	if a := runs[1].events[0].Data.(phases.ServerEvent).Action; a != "restart" {
		t.Errorf("second run starts with %q", a)
	}
}

// The decode step from a decode-only window: GEMM, MoE, attention and the
// other kernels from the window (micro's GEMM beside in the source), the
// host's gaps from its wall time per step, the profiler-off period when it
// was measured. A window that timed no GEMM kernel leaves GEMM to micro,
// its MoE kernels counted with the other kernels.
func TestWholeSplitDecodeWindow(t *testing.T) {
	win := phases.ProfileSummary{Level: 1, Window: phases.WindowDecode, WindowS: 0.5, DecodeSteps: 100, GPUPerStepUs: 3000,
		PerStepUs: map[string]float64{"gemm": 2400, "other": 500, "attention": 100},
		StepMix:   &phases.StepMix{Steps: 100, StepTokens: 100, DecodeTokens: 100, GenerationTokens: 100}, TotalCUDAUs: 300000}
	for _, tc := range []struct {
		unprofiled, gemm, moe, other, host float64
		noGEMMKernels                      bool
		src, gemmSrc                       string
	}{
		{0, 2.4, 0, 0.5, 5 - 2.4 - 0.6, false, "profiler on", "as the engine ran them"},
		{4, 2.4, 0, 0.5, 4 - 2.4 - 0.6, false, "profiler off", "micro's isolated GEMMs at M=1 beside, a cross-check: 2.00 ms"},
		{4, 2.4, 0, 0.5, 4 - 2.4 - 0.6, true, "profiler off", "GEMM kernels 0.00 ms + MoE kernels (routed and shared experts as served, routing) 2.40 ms"},
	} {
		w := win
		w.UnprofiledStepMs = tc.unprofiled
		if tc.noGEMMKernels {
			w.PerStepUs = map[string]float64{"moe": 2400, "other": 500, "attention": 100}
		}
		evs := budgetEvents(
			phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 12, MedianTPOTms: 4, MeanTPOTms: 4, TotalInputTokens: 12 * 16},
			phases.KindNCCLNone, phases.NCCLNone{TP: 1, NProc: 1, Reason: "one GPU"},
			phases.KindMicroStep, phases.GEMMStep{M: 1, SumUs: 2000},
			phases.KindProfileSummary, w)
		s := Budget(evs).Single.Whole
		got := map[string]TPOTPart{}
		for _, p := range s.Parts {
			got[p.Name] = p
		}
		_, hasMoE := got["MoE kernels"]
		if !near(got["GEMM"].Ms, tc.gemm) || !strings.Contains(got["GEMM"].Source, tc.gemmSrc) || hasMoE || got["GEMM"].Step != phases.Profile ||
			!near(got["attention"].Ms, 0.1) || !near(got["other kernels"].Ms, tc.other) ||
			!near(got["host gaps"].Ms, tc.host) || !strings.Contains(got["host gaps"].Source, tc.src) {
			t.Errorf("unprofiled %.1f, no GEMM kernels %v: parts %+v", tc.unprofiled, tc.noGEMMKernels, s.Parts)
		}
	}
}

// On vLLM the routed experts run in fused-MoE kernels, which the profile
// files under MoE: the decode step counts them once, in its GEMM part with
// the dense GEMMs (micro's per-step sum, experts included, stands beside as
// a cross-check, never added on top: the host's gaps stay positive).
func TestWholeSplitFusedExpertsCountedOnce(t *testing.T) {
	win := phases.ProfileSummary{Level: 8, Window: phases.WindowDecode, WindowS: 1, DecodeSteps: 100, GPUPerStepUs: 9000,
		PerStepUs: map[string]float64{"gemm": 2000, "moe": 6000, "other": 800, "attention": 200},
		StepMix:   &phases.StepMix{Steps: 100, StepTokens: 800, DecodeTokens: 800, GenerationTokens: 800}, TotalCUDAUs: 900000}
	evs := budgetEvents(
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, Completed: 64, MedianTPOTms: 10, MeanTPOTms: 10, TotalInputTokens: 64 * 16},
		phases.KindNCCLNone, phases.NCCLNone{TP: 1, NProc: 1, Reason: "one GPU"},
		phases.KindMicroStep, phases.GEMMStep{M: 8, SumUs: 7500},
		phases.KindProfileSummary, win)
	var s *TPOTSplit
	for _, l := range Budget(evs).Levels {
		if l.Concurrency == 8 {
			s = l.Whole
		}
	}
	if s == nil {
		t.Fatal("no split at C=8")
	}
	got := map[string]float64{}
	for _, p := range s.Parts {
		got[p.Name] = p.Ms
	}
	if !near(got["GEMM"], 8) || !near(got["other kernels"], 0.8) || !near(got["host gaps"], 1) {
		t.Errorf("parts %v", got)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "negative") || strings.Contains(w, "uniform top-k") {
			t.Errorf("warning %q", w)
		}
	}
}

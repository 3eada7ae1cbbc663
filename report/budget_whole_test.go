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
	for _, want := range []string{`"single":{`, `"tpot_ms":12.4`, `"has_allreduce":true`, `"whole":{`, `"parts":[`, `"levels":[`} {
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

// The decode step from a decode-only window: GEMM from micro, the other
// kernels from the window, and the host's gaps from its wall time per step,
// the profiler-off period when it was measured.
func TestWholeSplitDecodeWindow(t *testing.T) {
	win := phases.ProfileSummary{Level: 1, Window: phases.WindowDecode, WindowS: 0.5, DecodeSteps: 100, GPUPerStepUs: 3000,
		PerStepUs: map[string]float64{"gemm": 2400, "other": 500, "attention": 100},
		StepMix:   &phases.StepMix{Steps: 100, StepTokens: 100, DecodeTokens: 100, GenerationTokens: 100}, TotalCUDAUs: 300000}
	for _, tc := range []struct {
		unprofiled, host float64
		src              string
	}{{0, 5 - 2 - 0.6, "profiler on"}, {4, 4 - 2 - 0.6, "profiler off"}} {
		w := win
		w.UnprofiledStepMs = tc.unprofiled
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
		if !near(got["GEMM"].Ms, 2) || !near(got["attention"].Ms, 0.1) || !near(got["other kernels"].Ms, 0.5) ||
			!near(got["host gaps"].Ms, tc.host) || !strings.Contains(got["host gaps"].Source, tc.src) {
			t.Errorf("unprofiled %.1f: parts %+v", tc.unprofiled, s.Parts)
		}
	}
}

// The sweep's own stall and clean gap split a level's TPOT: the prefill
// part is the stall, the decode step's wall the clean gap (the decode-only
// window's period said beside); with too few clean gaps the window's
// period stands, and says why.
func TestBudgetSweepStall(t *testing.T) {
	pw := &phases.PrefillWait{Requests: 20, DecodeBatch: 6, PromptTokensPerToken: 12, StallMsPerToken: 1.5, CleanGapMs: 9, Measured: 18, CleanShare: 0.8}
	lv := phases.LevelResult{Concurrency: 8, Completed: 16, MedianTPOTms: 10.4, MeanTPOTms: 10.5, TotalInputTokens: 16 * 256, PrefillWait: pw}
	win := phases.ProfileSummary{Level: 8, Window: phases.WindowDecode, WindowS: 0.5, DecodeSteps: 50, UnprofiledStepMs: 10,
		StepMix: &phases.StepMix{Steps: 50, DecodeTokens: 400}, PerStepUs: map[string]float64{"other": 1000}, GPUPerStepUs: 7000}
	split := func() *TPOTSplit {
		b := Budget(budgetEvents(phases.KindMacroLevel, lv, phases.KindMicroStep, phases.GEMMStep{M: 8, SumUs: 6000},
			phases.KindProfileSummary, win))
		for _, l := range b.Levels {
			if l.Concurrency == 8 {
				return l.Whole
			}
		}
		t.Fatal("no split at C=8")
		return nil
	}
	w := split()
	if !near(w.GroupMs(GroupDecode), 9) || !near(w.GroupMs(GroupPrefill), 1.5) || !near(w.SumMs, 10.5) {
		t.Fatalf("decode %.2f prefill %.2f sum %.2f: %+v", w.GroupMs(GroupDecode), w.GroupMs(GroupPrefill), w.SumMs, w.Parts)
	}
	src := ""
	for _, p := range w.Parts {
		src += p.Source + "\n"
	}
	for _, want := range []string{"the sweep's own decode step: 9.00 ms", "step period beside: 10.00 ms", "wall time: the sweep's 18 requests' token gaps"} {
		if !strings.Contains(src, want) {
			t.Errorf("sources lack %q:\n%s", want, src)
		}
	}
	pw.CleanShare = 0.1
	w = split()
	if !near(w.GroupMs(GroupDecode), 10) || !strings.Contains(w.Parts[len(w.Parts)-2].Source, "too few to stand in: 10%") {
		t.Errorf("with 10%% clean gaps: decode %.2f, %+v", w.GroupMs(GroupDecode), w.Parts)
	}
}

// Without the sweep's stall (its token chunks were not kept) and without a
// step mix at the level, the prefill part is still the device time of a
// prompt token × the prompt tokens the sweep's requests waited for: that
// count is the sweep's own and needs no step mix.
func TestBudgetPrefillWaitWithoutStepMix(t *testing.T) {
	pw := &phases.PrefillWait{Requests: 16, DecodeBatch: 6, PromptTokensPerToken: 12}
	lv := phases.LevelResult{Concurrency: 8, Completed: 16, MedianTPOTms: 10.4, MeanTPOTms: 10.5, TotalInputTokens: 16 * 256, PrefillWait: pw}
	dec := phases.ProfileSummary{Level: 8, Window: phases.WindowDecode, WindowS: 0.5, DecodeSteps: 50, GPUPerStepUs: 7000,
		StepMix: &phases.StepMix{Steps: 50, DecodeTokens: 400}, PerStepUs: map[string]float64{"other": 1000}}
	// 100 decode steps at 7 ms of device time, and 2 ms for 1000 prompt tokens.
	st := phases.ProfileSummary{Level: 8, Window: phases.WindowSteady, WindowS: 1, DecodeSteps: 100, TotalCUDAUs: 702000,
		StepMix: &phases.StepMix{Steps: 100, DecodeTokens: 800, PromptTokens: 1000}}
	b := Budget(budgetEvents(phases.KindMacroLevel, lv, phases.KindMicroStep, phases.GEMMStep{M: 8, SumUs: 6000},
		phases.KindProfileSummary, dec, phases.KindProfileSummary, st))
	for _, l := range b.Levels {
		if l.Concurrency != 8 {
			continue
		}
		if l.Whole.Mix != nil {
			t.Fatalf("the level has a step mix: %+v", l.Whole.Mix)
		}
		if !near(l.Whole.GroupMs(GroupPrefill), 0.002*12) {
			t.Errorf("prefill %.4f ms, want %.4f: parts %+v, unmeasured %q", l.Whole.GroupMs(GroupPrefill), 0.002*12, l.Whole.Parts, l.Whole.Unmeasured)
		}
		return
	}
	t.Fatal("no split at C=8")
}

package report

import (
	"math"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// synthBaseline is a hand-made baseline: --max-num-seqs 64, the plateau
// at C=64 (max_num_seqs). The budget split the decode step at C=1 and
// C=64 with every part but GEMM the same (communication 1, attention 1,
// other kernels 2, host gaps 1 ms) and GEMM 5 → 8 ms: a step of 10 ms at
// C=1 and 13 ms at C=64. Micro timed the GEMMs at M=1, 4, 32, 64, 128,
// 256: 5, 5.6, 7, 8, 10, 14 ms. Requests: 100 prompt and 101 output
// tokens (100 gaps).
func synthBaseline() BaselineFigures {
	lvl := func(c int, tokS, tpot, ttft, p90, prefill, perTok float64) BaselineLevel {
		return BaselineLevel{C: c, TokS: tokS, MeanTPOTms: tpot, MeanTTFTms: ttft, P90TPOTms: p90, MedianTPOTms: tpot, PrefillMs: prefill,
			PromptPerToken: perTok, PromptPerStep: 64, HasPrefill: true, PromptLen: 100, OutputLen: 101}
	}
	step := func(c int, gemm, prefill float64) BudgetFigures {
		return BudgetFigures{C: c, CommMs: 1, GEMMms: gemm, AttnMs: 1, OtherMs: 2, HostMs: 1, PrefillMs: prefill, Complete: true}
	}
	return BaselineFigures{PlateauC: 64, PlateauTokS: 3000, Verdict: "max_num_seqs", MaxNumSeqs: 64, MaxNumSeqsSource: "the launch command",
		Levels: []BaselineLevel{
			lvl(1, 100, 10, 20, 11, 0, 0),     // 10 = step 10 + prefills 0
			lvl(64, 3000, 20, 200, 22, 5, 50), // 20 = step 13 + prefills 5 + rest 2
			lvl(128, 3200, 30, 1500, 33, 7, 70),
		},
		Budgets:     []BudgetFigures{step(1, 5, 0), step(64, 8, 5)},
		MicroGEMMms: map[int]float64{1: 5, 4: 5.6, 32: 7, 64: 8, 128: 10, 256: 14},
		KVSeqs:      200, KVFrom: "hand-made", TP: 2, GPUs: 2, PromptLen: 100, OutputLen: 101,
		AllReduce: []AllReduceFigure{{M: 64, NProc: 2, Count: 10, StepMs: 1}},
		AllToAll:  []AllToAllFigure{{Tokens: 16, NProc: 2, Us: 50}, {Tokens: 32, NProc: 2, Us: 80}},
	}
}

const synthLaunch = "vllm serve m --tensor-parallel-size 2 --max-num-seqs 64 --port 8000"

// wantPred fails unless got is within 1e-6 relative of want.
func wantPred(t *testing.T, what string, got phases.Predicted, want float64) {
	t.Helper()
	if !got.OK || math.Abs(got.Value-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: %.6f (ok %v, %s%s), want %.6f", what, got.Value, got.OK, got.Formula, got.Why, want)
	}
}

func predictArgs(t *testing.T, args ...string) phases.VariantPrediction {
	t.Helper()
	p := PredictVariant(synthBaseline(), synthLaunch, phases.VariantSpec{Name: "v", Args: args})
	t.Logf("%s: %s", strings.Join(args, " "), strings.Join(p.Model, " | "))
	return p
}

// TestPredictMaxNumSeqsRaised: 64 → 128 seats (the KV cache holds 200).
// The plateau moves to C=128, the first level filling 128 seats; made
// from the baseline's C=64 (one client a seat, as 128 on 128). The step
// at batch 128: GEMM 8 × micro 10/8 = 10, the rest of the step as at both
// splits, 1+10+1+2+1 = 15 ms; the prefills 5 × 128/64 = 10; the rest
// 20 − 13 − 5 = 2: TPOT 27 ms. Every client seated: E2EL 200 + 100×20 =
// 2200 → 200 + 100×27 = 2900 ms, tok/s 3000 × 128/64 × 2200/2900 =
// 4551.72. TPOT at C=1 unchanged, 10. Uncertainty 5% + half the change:
// TPOT 5 + 50×7/27 = 17.96%, tok/s 5 + 50×1551.72/4551.72 = 22.05%.
func TestPredictMaxNumSeqsRaised(t *testing.T) {
	p := predictArgs(t, "--max-num-seqs", "128")
	wantPred(t, "plateau C", p.PlateauC, 128)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 27)
	wantPred(t, "tok/s", p.PlateauTokS, 3000*2*2200.0/2900)
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10)
	if u := p.TPOTPlateauMs.Uncertainty; math.Abs(u-(5+50*7.0/27)) > 1e-9 {
		t.Errorf("TPOT uncertainty %.4f", u)
	}
	if u := p.PlateauTokS.Uncertainty; math.Abs(u-(5+50*(3000*2*2200.0/2900-3000)/(3000*2*2200.0/2900))) > 1e-9 {
		t.Errorf("tok/s uncertainty %.4f", u)
	}
	if !strings.Contains(p.Model[1], "--max-num-seqs 64 → 128") || !strings.Contains(p.TPOTPlateauMs.Formula, "estimate, ±18%") {
		t.Errorf("model %q, formula %q", p.Model, p.TPOTPlateauMs.Formula)
	}
}

// TestPredictMaxNumSeqsCappedByKV: 500 seats are more than the KV cache's
// 200: taken as 200; the sweep ends at C=128, below them: said.
func TestPredictMaxNumSeqsCappedByKV(t *testing.T) {
	p := predictArgs(t, "--max-num-seqs=500")
	wantPred(t, "plateau C", p.PlateauC, 128)
	w := strings.Join(p.Warnings, " | ")
	for _, s := range []string{"taken as 200", "end at C=128, below the 200 seats"} {
		if !strings.Contains(w, s) {
			t.Errorf("warnings lack %q: %s", s, w)
		}
	}
}

// TestPredictMaxNumSeqsLowered: 64 → 32 seats. The plateau at C=64 (the
// first level filling 32 seats), made from the baseline's C=128 (two
// clients a seat: a queue, as 64 on 32). Reference: 64 seats, step 13,
// prefills 7, rest 30 − 13 − 7 = 10. At batch 32: GEMM 8 × micro 7/8 = 7,
// step 1+7+1+2+1 = 12; prefills 7 × 32/64 = 3.5: TPOT 12 + 3.5 + 10 =
// 25.5 ms. Seats full with a queue: tok/s 3200 × 32/64 × 30/25.5 =
// 1882.35.
func TestPredictMaxNumSeqsLowered(t *testing.T) {
	p := predictArgs(t, "--max-num-seqs", "32")
	wantPred(t, "plateau C", p.PlateauC, 64)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 25.5)
	wantPred(t, "tok/s", p.PlateauTokS, 3200*0.5*30/25.5)
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10)
}

// TestPredictChunkedPrefill: whole prefills → chunked. At the plateau
// (batch 64, 64 prompt tokens a step) a prompt token costs its marginal
// GEMM, micro M=64 → 128: (10 − 8) × 8/8 (engine over micro) / 64 =
// 0.03125 ms, + the other parts' slope, 0 (the same at both splits):
// against 5/50 = 0.1 ms measured. Prefills 50 × 0.03125 = 1.5625 ms,
// TTFT × 0.3125: TPOT 13 + 1.5625 + 2 = 16.5625 ms; E2EL 200×0.3125 +
// 100×16.5625 = 1718.75 ms: tok/s 3000 × 2200/1718.75 = 3840. C=1 has no
// prefills to move: 10.
func TestPredictChunkedPrefill(t *testing.T) {
	p := predictArgs(t, "--enable-chunked-prefill")
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 16.5625)
	wantPred(t, "tok/s", p.PlateauTokS, 3840)
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10)
	wantPred(t, "plateau C", p.PlateauC, 64)
}

// TestPredictSpeculative: ngram, k=3, acceptance 0.5 a draft: mean
// accepted length (1 − 0.5⁴)/(1 − 0.5) = 1.875, draft cost 2%: × 1.02 /
// 1.875 = 0.544. The verification step's GEMM at M = batch × 4: C=1,
// 5 × micro 5.6/5 = 5.6, step 10.6 × 0.544 = 5.7664 ms; the plateau,
// 8 × 14/8 = 14, step 19 × 0.544 = 10.336 + prefills 5 + rest 2 =
// 17.336 ms.
func TestPredictSpeculative(t *testing.T) {
	p := predictArgs(t, "--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"acceptance_rate":0.5}`)
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10.6*0.544)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 19*0.544+7)
	// Without an acceptance measured or given, no TPOT.
	q := predictArgs(t, "--speculative-config", `{"method":"eagle","num_speculative_tokens":2}`)
	if q.TPOTPlateauMs.OK || !strings.Contains(q.TPOTPlateauMs.Why, "no acceptance measured") || !q.PlateauC.OK {
		t.Errorf("no acceptance: %+v / %+v", q.TPOTPlateauMs, q.PlateauC)
	}
}

// TestPredictSpeculativeMeasured: the baseline speculates (k=2) and
// measured a mean accepted length of 1.75 (0.5 a draft: 1 + 0.5 + 0.25);
// the variant drafts 3: 1.875 at the same rate.
func TestPredictSpeculativeMeasured(t *testing.T) {
	b := synthBaseline()
	b.SpecAcceptLength, b.SpecAt = 1.75, 64
	launch := synthLaunch + ` --speculative-config '{"method":"ngram","num_speculative_tokens":2}'`
	pr := &predictor{b: b, base: parseFlags(splitLaunch(launch))}
	l, from := pr.acceptance(specConf{Method: "ngram", K: 3})
	if math.Abs(l-1.875) > 1e-6 || !strings.Contains(from, "0.50 per draft token") {
		t.Errorf("accepted length %.6f (%s), want 1.875", l, from)
	}
}

// TestPredictTensorParallel: TP 2 → 4, no NCCL figure at 4 GPUs: a ring
// all-reduce at the bus bandwidth measured, communication × (3/4)/(1/2) =
// 1.5; GEMM and attention × 2/4. C=1: 1.5 + 2.5 + 0.5 + 2 + 1 = 7.5 ms.
// The plateau: 1.5 + 4 + 0.5 + 2 + 1 = 9, the prefills × 9/13, rest 2:
// 9 + 5×9/13 + 2 = 14.4615 ms. GPUs 2 → 4.
func TestPredictTensorParallel(t *testing.T) {
	p := predictArgs(t, "--tensor-parallel-size", "4")
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 7.5)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 9+5*9.0/13+2)
	if p.GPUs != 4 {
		t.Errorf("GPUs %d, want 4", p.GPUs)
	}
	// From one GPU there are no collectives to rescale: said.
	b := synthBaseline()
	b.TP, b.AllReduce = 1, nil
	q := PredictVariant(b, "vllm serve m --max-num-seqs 64", phases.VariantSpec{Name: "tp2", Args: []string{"--tensor-parallel-size=2"}})
	if q.TPOTC1Ms.OK || !strings.Contains(q.CannotPredict, "no collectives to rescale") {
		t.Errorf("TP 1 → 2: %+v, %q", q.TPOTC1Ms, q.CannotPredict)
	}
}

// TestPredictDataParallel: 2 replicas: tok/s 3000 × 2, the plateau's C ×
// 2, TPOT unchanged, GPUs 2 → 4.
func TestPredictDataParallel(t *testing.T) {
	p := predictArgs(t, "--data-parallel-size", "2")
	wantPred(t, "tok/s", p.PlateauTokS, 6000)
	wantPred(t, "plateau C", p.PlateauC, 128)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 20)
	if p.GPUs != 4 || p.PlateauTokS.Uncertainty != 5 {
		t.Errorf("GPUs %d, uncertainty %.1f", p.GPUs, p.PlateauTokS.Uncertainty)
	}
}

// TestPredictExpertParallel: 10 all-reduces a step at TP 2: half follow
// the MoE. C=1: 1/2 + 5 layers × 2 × 50 µs (½ token a GPU, below the
// smallest size: its latency) = 1.0 ms, step 10. The plateau: 32 tokens
// a GPU, 80 µs: 0.5 + 0.8 = 1.3 ms, TPOT 13.3 + 5 + 2 = 20.3 ms.
func TestPredictExpertParallel(t *testing.T) {
	p := predictArgs(t, "--enable-expert-parallel")
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 20.3)
}

// TestPredictQuantization: fp8 weights: GEMM × 1/2. C=1: 1+2.5+1+2+1 =
// 7.5 ms; the plateau 1+4+1+2+1 = 9, + 5 + 2 = 16 ms.
func TestPredictQuantization(t *testing.T) {
	p := predictArgs(t, "--quantization", "fp8")
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 7.5)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 16)
}

// TestPredictCannot: an environment variable or an unknown flag alone is
// not predicted; beside a modelled change it is assumed to change nothing,
// said; a neutral flag changes nothing.
func TestPredictCannot(t *testing.T) {
	b := synthBaseline()
	p := PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "env", Env: map[string]string{"NCCL_ALGO": "Ring"}})
	if p.TPOTC1Ms.OK || p.PlateauC.OK || !strings.Contains(p.CannotPredict, "NCCL_ALGO") {
		t.Errorf("env alone: %+v", p)
	}
	p = predictArgs(t, "--block-size", "32", "--max-num-seqs", "128")
	if !p.TPOTPlateauMs.OK || !strings.Contains(p.CannotPredict, "--block-size not set → 32: not modelled") ||
		!strings.Contains(strings.Join(p.Warnings, " "), "assumed to change nothing: --block-size") {
		t.Errorf("beside a model: %q %q", p.CannotPredict, p.Warnings)
	}
	p = predictArgs(t, "--port", "9000")
	wantPred(t, "neutral: tok/s", p.PlateauTokS, 3000)
	if p.CannotPredict != "" {
		t.Errorf("neutral flag: %q", p.CannotPredict)
	}
	p = PredictVariant(BaselineFigures{}, synthLaunch, phases.VariantSpec{Name: "x", Args: []string{"--max-num-seqs", "8"}})
	if p.PlateauTokS.OK || !strings.Contains(p.CannotPredict, "no sweep with a plateau") {
		t.Errorf("no baseline: %+v", p)
	}
}

// TestPredictSLOCapacity: the search found C=60 under tpot=25ms (p90 of
// 90% of requests). The baseline's levels' p90 (11, 22, 33 ms) cross 25
// at C = 64 + 64×3/11 = 81.45. Chunked, their p90 × predicted/measured
// mean TPOT: C=64 22 × 16.5625/20 = 18.21875; C=128 (64 seats, prefills
// 70 × 0.03125 = 2.1875, rest 30 − 13 − 7 = 10: 25.1875 of 30) 33 ×
// 25.1875/30 = 27.70625; crossing at 64 + 64 × 6.78125/9.4875 =
// 109.744. The answer: 60 × 109.744/81.4545.
func TestPredictSLOCapacity(t *testing.T) {
	b := synthBaseline()
	b.Search = &phases.Search{Mode: phases.SearchConcurrency, SLO: "tpot=25ms", Answer: 60, Done: true}
	p := PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "c", Args: []string{"--enable-chunked-prefill"}})
	want := 60 * (64 + 64*6.78125/9.4875) / (64 + 64*3.0/11)
	wantPred(t, "SLO capacity", p.SLOCapacity, want)
	b.Search.SLO = "ttft=1s"
	p = PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "c", Args: []string{"--enable-chunked-prefill"}})
	if p.SLOCapacity.OK || !strings.Contains(p.SLOCapacity.Why, "bounds no TPOT") {
		t.Errorf("TTFT SLO: %+v", p.SLOCapacity)
	}
}

// TestPredictArgsAsOneString: a flag and its value in one arg (as a
// campaign's matrix writes them) is the same change as two args:
// TestPredictMaxNumSeqsLowered's 25.5 ms.
func TestPredictArgsAsOneString(t *testing.T) {
	p := predictArgs(t, "--max-num-seqs 32")
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 25.5)
}

// TestPredictSeatsNotBinding: the plateau at C=64 is the engine step's,
// with 256 seats; 128 seats still hold its 64 clients: it stays, from
// the baseline's own plateau (TPOT 20 ms, 3000 tok/s).
func TestPredictSeatsNotBinding(t *testing.T) {
	b := synthBaseline()
	b.Verdict, b.MaxNumSeqs = "engine_step", 256
	p := PredictVariant(b, "vllm serve m --max-num-seqs 256", phases.VariantSpec{Name: "s", Args: []string{"--max-num-seqs", "128"}})
	wantPred(t, "plateau C", p.PlateauC, 64)
	wantPred(t, "TPOT plateau", p.TPOTPlateauMs, 20)
	wantPred(t, "tok/s", p.PlateauTokS, 3000)
	if !strings.Contains(strings.Join(p.Model, " "), "still fit the seats") {
		t.Errorf("model: %q", p.Model)
	}
}

// TestPredictTokenBudget: with whole prefills a token budget leaves the
// prefills alone (TPOT 20 ms). Chunked (the baseline's steps mixed), a
// budget of 96 tokens leaves 96 − 64 = 32 prompt tokens a step beside the
// 64 decode tokens: micro 8 → 8.2 ms from M=64 to 96 (timed), 0.2/32 =
// 0.00625 ms a prompt token, against (10 − 8)/64 = 0.03125 at the 64 a
// step carried without a budget: the prefills × 0.2, 5 → 1 ms, TPOT 13 +
// 1 + 2 = 16 ms.
func TestPredictTokenBudget(t *testing.T) {
	p := predictArgs(t, "--max-num-batched-tokens", "96")
	wantPred(t, "whole prefills: TPOT plateau", p.TPOTPlateauMs, 20)
	b := synthBaseline()
	for i := range b.Levels {
		b.Levels[i].Mixed = true
	}
	b.MicroGEMMms[96] = 8.2
	p = PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "t", Args: []string{"--max-num-batched-tokens=96"}})
	wantPred(t, "chunked: TPOT plateau", p.TPOTPlateauMs, 16)
}

// TestPredictPartialSplit: the budget timed GEMM and communication only
// (micro and NCCL, no profile window): C=1 splits 10 ms as communication
// 1 + GEMM 5 + an unsplit rest 4. TP 2 → 4: 1 × 1.5 + 5 × 2/4 + 4 = 8 ms,
// said. Without any split or clean gap, speculation takes the whole TPOT
// as decode steps: C=1, 10 × 1.02/1.875 = 5.44 ms, said.
func TestPredictPartialSplit(t *testing.T) {
	b := synthBaseline()
	for i := range b.Budgets {
		f := &b.Budgets[i]
		f.AttnMs, f.OtherMs, f.HostMs, f.Complete, f.Partial = 0, 0, 0, false, true
	}
	p := PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "tp4", Args: []string{"--tensor-parallel-size", "4"}})
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 8)
	if w := strings.Join(p.Warnings, " "); !strings.Contains(w, "not split apart in the baseline") {
		t.Errorf("warnings: %s", w)
	}
	b.Budgets = nil
	for i := range b.Levels {
		b.Levels[i].HasPrefill = false
	}
	p = PredictVariant(b, synthLaunch, phases.VariantSpec{Name: "s", Args: []string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"acceptance_rate":0.5}`}})
	wantPred(t, "TPOT C=1", p.TPOTC1Ms, 10*0.544)
	if w := strings.Join(p.Warnings, " "); !strings.Contains(w, "whole of each TPOT is taken as decode steps") {
		t.Errorf("warnings: %s", w)
	}
}

package report

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// handBaseline is a sweep worked by hand: levels 1, 8, 32, 128, 256 with a
// plateau at C=128 capped by max_num_seqs 128, the budget's GEMM 10 ms and
// prefill 12 ms at the plateau, 128 output tokens a request.
func handBaseline() BaselineFigures {
	return BaselineFigures{
		Levels:  []LevelPoint{{1, 250, 4}, {8, 800, 10}, {32, 1600, 20}, {128, 3200, 40}, {256, 3200, 80}},
		Plateau: &phases.Plateau{Concurrency: 128, OutputThroughput: 3200, Reason: "max_num_seqs", MaxNumSeqs: 128},
		GEMMms:  10, PrefillMs: 12, OutputLen: 128, HasBudget: true,
	}
}

const handLaunch = "vllm serve m --max-num-seqs 128 --port 8000"

func TestPredictSmallerCap(t *testing.T) {
	p := PredictVariant(handBaseline(), handLaunch, phases.VariantSpec{Name: "cap64", Args: []string{"--max-num-seqs 64"}})
	// C=64 lies halfway between 32 and 128 in log C: TPOT 20 + ½·20 = 30 ms,
	// throughput 1600 + ½·1600 = 2400 tok/s; the next level of the ladder is 128.
	predNear(t, "tpot", p.TPOTPlateauMs, 30)
	predNear(t, "tok/s", p.PlateauTokS, 2400)
	predNear(t, "C", p.PlateauC, 128)
	predNear(t, "C=1", p.TPOTC1Ms, 4)
	if p.CannotPredict != "" || len(p.Model) != 1 || len(p.Warnings) == 0 {
		t.Fatalf("%+v", p)
	}
}

func TestPredictLargerCapOnlyWhenItBinds(t *testing.T) {
	b := handBaseline()
	// Past the sweep's top (256) the server runs 256 at most: the sweep's own level.
	p := PredictVariant(b, handLaunch, phases.VariantSpec{Name: "cap512", Args: []string{"--max-num-seqs=512"}})
	predNear(t, "tpot", p.TPOTPlateauMs, 80)
	predNear(t, "C", p.PlateauC, 256)
	b.Plateau.Reason = "kv_cache"
	p = PredictVariant(b, handLaunch, phases.VariantSpec{Name: "cap512", Args: []string{"--max-num-seqs", "512"}})
	predNear(t, "tok/s", p.PlateauTokS, 3200) // the cap does not bind: unchanged
}

func TestPredictChunkedPrefill(t *testing.T) {
	// Saved per token: GEMM 10 × C 128 / 128 output = 10 ms (under the 12 ms
	// prefill): TPOT 40 − 10 = 30 ms, throughput 3200 × 40/30 = 4266.7 tok/s.
	p := PredictVariant(handBaseline(), handLaunch, phases.VariantSpec{Name: "chunked", Args: []string{"--enable-chunked-prefill"}})
	predNear(t, "tpot", p.TPOTPlateauMs, 30)
	predNear(t, "tok/s", p.PlateauTokS, 3200*40.0/30)
}

func TestPredictSaysWhatItCannot(t *testing.T) {
	p := PredictVariant(handBaseline(), handLaunch, phases.VariantSpec{Name: "x", Args: []string{"--kv-cache-dtype fp8"}, Env: map[string]string{"VLLM_X": "1"}})
	if p.CannotPredict == "" || p.PlateauTokS.OK || p.PlateauTokS.Why == "" {
		t.Fatalf("%+v", p)
	}
	p = PredictVariant(BaselineFigures{}, handLaunch, phases.VariantSpec{Name: "y"})
	if p.CannotPredict == "" {
		t.Fatal("no baseline, yet predicted")
	}
	dp := PredictVariant(handBaseline(), handLaunch, phases.VariantSpec{Name: "dp2", Args: []string{"--data-parallel-size 2"}})
	predNear(t, "dp tok/s", dp.PlateauTokS, 6400)
}

func predNear(t *testing.T, what string, p phases.Predicted, want float64) {
	t.Helper()
	if !p.OK || math.Abs(p.Value-want) > 1e-6*math.Max(1, want) {
		t.Errorf("%s: predicted %+v, want %g", what, p, want)
	}
}

// TestPredictTheH200Variants: the rig's baseline on one H200 (separate
// prefill, --max-num-seqs 128) predicts its two variants measured there
// the same day (--max-num-seqs 64, chunked prefill); the errors are logged
// for the notes and held to what each model can claim.
func TestPredictTheH200Variants(t *testing.T) {
	dir := filepath.Join("..", "scripts", "fieldrig", "testdata", "h200-tp1-variants")
	base := BaselineOf(mustJournal(t, filepath.Join(dir, "separate", "fieldrig.journal.jsonl")))
	launch := "python3 serve.py --tensor-parallel-size 1 --max-num-seqs 128 --max-model-len 1024 --port 8000"
	for _, c := range []struct {
		name, arg string
		bound     float64 // the largest |error| of the plateau's throughput, %
	}{{"cap64", "--max-num-seqs 64", 10}, {"chunked", "--enable-chunked-prefill", 25}} {
		p := PredictVariant(base, launch, phases.VariantSpec{Name: c.name, Args: []string{c.arg}})
		m := MeasureVariant(mustJournal(t, filepath.Join(dir, c.name, "fieldrig.journal.jsonl")))
		if !m.Has["j_per_token"] {
			t.Errorf("%s: no J/token at the plateau", c.name)
		}
		t.Logf("%s: %.3f J/token at the plateau", c.name, m.JPerToken)
		for _, f := range []struct {
			key  string
			pred phases.Predicted
			val  float64
		}{{"plateau_tok_s", p.PlateauTokS, m.PlateauTokS}, {"tpot_c1_ms", p.TPOTC1Ms, m.TPOTC1Ms}, {"tpot_plateau_ms", p.TPOTPlateauMs, m.TPOTPlateauMs}, {"plateau_concurrency", p.PlateauC, m.PlateauC}} {
			pct, ok := PredictionError(f.pred, f.val, m.Has[f.key])
			if !ok {
				t.Fatalf("%s %s: no error (%+v, %v)", c.name, f.key, f.pred, f.val)
			}
			t.Logf("%s %s: predicted %.2f, measured %.2f (%+.1f%%) — %s", c.name, f.key, f.pred.Value, f.val, pct, f.pred.Formula)
			if f.key == "plateau_tok_s" && math.Abs(pct) > c.bound {
				t.Errorf("%s: the plateau's throughput off by %+.1f%%, over %g%%", c.name, pct, c.bound)
			}
		}
	}
}

func mustJournal(t *testing.T, path string) []phases.Event {
	t.Helper()
	rr, err := ReadJournalFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return rr.Events
}

package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// h200Variants is the rig's one-GPU campaign measured on an H200: the
// baseline (whole prefills between decode steps, --max-num-seqs 128)
// and its variants, each its own journal.
const h200Variants = "../scripts/fieldrig/testdata/h200-tp1-variants"

func h200Journal(t *testing.T, name string) []phases.Event {
	t.Helper()
	rr, err := ReadJournalFile(filepath.Join(h200Variants, name, "fieldrig.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return rr.Events
}

// launchOf is the launch line a journal's run served.
func launchOf(events []phases.Event) string {
	for _, ev := range events {
		if d, ok := ev.Data.(phases.RunStarted); ok && d.Identity.Launch != "" {
			return d.Identity.Launch
		}
	}
	return ""
}

// TestBaselineOfH200: the baseline's figures from its journal: the
// verdict judged again (max_num_seqs: 128 of 128 under a queue at C=256),
// the KV cache's requests (128 running at 36%), the budget split at C=1,
// 8 and 128, micro's GEMMs, one GPU without collectives.
func TestBaselineOfH200(t *testing.T) {
	b := BaselineOf(h200Journal(t, "separate"))
	if b.PlateauC != 128 || b.Verdict != macro.LimitMaxSeqs || b.MaxNumSeqs != 128 || b.TP != 1 || b.GPUs != 1 || b.NoCollectives == "" {
		t.Errorf("plateau C=%d %s, seats %d, TP %d, GPUs %d, collectives %q", b.PlateauC, b.Verdict, b.MaxNumSeqs, b.TP, b.GPUs, b.NoCollectives)
	}
	if math.Abs(b.KVSeqs-128/0.3565826416015625) > 0.01 || b.KVTokens != 131072 {
		t.Errorf("KV: %.1f requests (%s), %d tokens", b.KVSeqs, b.KVFrom, b.KVTokens)
	}
	var split []string
	for _, f := range b.complete() {
		split = append(split, fmt.Sprint(f.C))
	}
	if strings.Join(split, ",") != "1,8,128" || len(b.MicroGEMMms) != 10 || len(b.Levels) != 5 {
		t.Errorf("splits at %v, %d micro M, %d levels", split, len(b.MicroGEMMms), len(b.Levels))
	}
	if f, _ := b.budgetAt(128); math.Abs(f.StepMs()-15.253) > 0.01 || math.Abs(f.PrefillMs-11.930) > 0.01 {
		t.Errorf("C=128: step %.3f, prefills %.3f", f.StepMs(), f.PrefillMs)
	}
}

// TestPredictH200Variants: the variants predicted from the baseline's
// journal alone, against what each measured on the H200: --max-num-seqs
// 64, the rig's chunked prefill, and the baseline's launch again (without
// the profiler set: the same serving, its spread). Every figure is
// predicted and measured, and each error lies within the prediction's own
// stated uncertainty (the plateau's C: one sweep level either way).
func TestPredictH200Variants(t *testing.T) {
	base := h200Journal(t, "separate")
	b, launch := BaselineOf(base), launchOf(base)
	variants := []phases.VariantSpec{
		{Name: "cap64", Args: []string{"--max-num-seqs", "64"}},
		{Name: "chunked", Args: []string{"--chunked-prefill"}},
		{Name: "noprof"},
	}
	for _, v := range variants {
		p := PredictVariant(b, launch, v)
		m := MeasureVariant(h200Journal(t, v.Name))
		for _, f := range []struct {
			key  string
			pred phases.Predicted
			meas float64
		}{
			{KeyPlateauTokS, p.PlateauTokS, m.PlateauTokS}, {KeyPlateauC, p.PlateauC, m.PlateauC},
			{KeyTPOTC1, p.TPOTC1Ms, m.TPOTC1Ms}, {KeyTPOTPlateau, p.TPOTPlateauMs, m.TPOTPlateauMs},
		} {
			pct, ok := PredictionError(f.pred, f.meas, m.Has[f.key])
			if !ok {
				t.Errorf("%s %s: no error (predicted %+v, measured %v)", v.Name, f.key, f.pred, m.Has[f.key])
				continue
			}
			t.Logf("%-8s %-20s predicted %8.2f ±%2.0f%%  measured %8.2f  error %+6.1f%%", v.Name, f.key, f.pred.Value, f.pred.Uncertainty, f.meas, pct)
			if f.key == KeyPlateauC {
				if !withinOneLevel(b, f.pred.Value, f.meas) {
					t.Errorf("%s: plateau at C=%.0f, predicted C=%.0f (one sweep level either way)", v.Name, f.meas, f.pred.Value)
				}
				continue
			}
			if math.Abs(pct) > f.pred.Uncertainty {
				t.Errorf("%s %s: error %+.1f%% beyond the stated ±%.0f%%: %s", v.Name, f.key, pct, f.pred.Uncertainty, f.pred.Formula)
			}
		}
		if p.SLOCapacity.OK || !strings.Contains(p.SLOCapacity.Why, "no SLO search") {
			t.Errorf("%s: SLO capacity without a search: %+v", v.Name, p.SLOCapacity)
		}
	}
}

// withinOneLevel reports whether c is the predicted level of the
// baseline's sweep or one next to it: the plateau's stated uncertainty.
func withinOneLevel(b BaselineFigures, pred, c float64) bool {
	for i, l := range b.Levels {
		if float64(l.C) != pred {
			continue
		}
		for j := max(i-1, 0); j <= min(i+1, len(b.Levels)-1); j++ {
			if float64(b.Levels[j].C) == c {
				return true
			}
		}
	}
	return false
}

package report

import (
	"math"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// h100Campaign is the rig's variants campaign as `profdeck run` served it
// on one H100: the baseline, then each variant of its `variants:` list
// (--max-num-seqs 64, chunked prefill), all in one journal.
const h100Campaign = "../scripts/fieldrig/testdata/h100-tp1-variants-campaign/fieldrig-variants.journal.jsonl"

// The second run adds the batch cap doubled, whose sweep finds no plateau
// under its top level (its plateau figures are not measured).
var h100Campaigns = map[string]int{
	h100Campaign: 2,
	"../scripts/fieldrig/testdata/h100-tp1-variants-campaign-2/fieldrig-variants.journal.jsonl": 3,
}

// TestPredictH100CampaignVariants: each variant predicted again from the
// baseline's events of the one journal, against what the variant
// measured in the same run; every error lies within the prediction's own
// stated uncertainty (the plateau's C: one sweep level either way), and
// the journal's own predictions (the run's) are those the model makes now.
func TestPredictH100CampaignVariants(t *testing.T) {
	for path, n := range h100Campaigns {
		checkH100Campaign(t, path, n)
	}
}

func checkH100Campaign(t *testing.T, path string, n int) {
	rr, err := ReadJournalFile(path)
	if err != nil {
		t.Fatal(err)
	}
	by := VariantEvents(rr.Events)
	base := by[phases.Baseline]
	b, launch := BaselineOf(base), launchOf(base)
	rows := variantRows(rr.Events)
	if len(rows) != n {
		t.Fatalf("%s: %d variants in the journal, want %d", path, len(rows), n)
	}
	for _, r := range rows {
		p := PredictVariant(b, launch, r.spec)
		m := MeasureVariant(by[r.spec.Name])
		for _, f := range []struct {
			key  string
			pred phases.Predicted
			meas float64
		}{
			{KeyPlateauTokS, p.PlateauTokS, m.PlateauTokS}, {KeyPlateauC, p.PlateauC, m.PlateauC},
			{KeyTPOTC1, p.TPOTC1Ms, m.TPOTC1Ms}, {KeyTPOTPlateau, p.TPOTPlateauMs, m.TPOTPlateauMs},
		} {
			pct, ok := PredictionError(f.pred, f.meas, m.Has[f.key])
			if !ok && !m.Has[KeyPlateauC] && f.key != KeyTPOTC1 {
				continue // no plateau under the sweep's top level: nothing measured to check
			}
			if !ok {
				t.Errorf("%s %s: no error (predicted %+v, measured %v)", r.spec.Name, f.key, f.pred, m.Has[f.key])
				continue
			}
			t.Logf("%-8s %-20s predicted %8.2f ±%2.0f%%  measured %8.2f  error %+6.1f%%", r.spec.Name, f.key, f.pred.Value, f.pred.Uncertainty, f.meas, pct)
			if f.key == KeyPlateauC {
				if !withinOneLevel(b, f.pred.Value, f.meas) {
					t.Errorf("%s: plateau at C=%.0f, predicted C=%.0f", r.spec.Name, f.meas, f.pred.Value)
				}
				continue
			}
			if math.Abs(pct) > f.pred.Uncertainty {
				t.Errorf("%s %s: error %+.1f%% beyond the stated ±%.0f%%: %s", r.spec.Name, f.key, pct, f.pred.Uncertainty, f.pred.Formula)
			}
		}
	}
}

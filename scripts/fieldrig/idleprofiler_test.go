package fieldrig_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// idleTruth is the part of /truth the idle-profiler check reads.
type idleTruth struct {
	Batch []struct {
		M            int     `json:"m"`
		GraphStepMs  float64 `json:"graph_step_ms"`
		ServedStepMs float64 `json:"served_step_ms"`
	} `json:"batch"`
	Served struct {
		MeanTPOTms float64 `json:"mean_tpot_ms"`
	} `json:"served"`
}

// TestIdleProfilerOnOneH200: the rig served on one H200 alternately without
// and with the torch profiler configured and never started (three times
// each, scripts/fieldrig/experiment-idle-profiler.sh), as the one-load order
// serves the sweep. At C=1 and C=128 the captured step's device time and the
// served decode step's wall differ by under 1% on average, and at C=1 so
// does the mean TPOT of the requests served.
func TestIdleProfilerOnOneH200(t *testing.T) {
	dir := filepath.Join("testdata", "h200-idle-profiler")
	for _, c := range []string{"c1", "c128"} {
		sums := map[string][3]float64{}
		for i, mode := range []string{"off", "on", "off", "on", "off", "on"} {
			raw, err := os.ReadFile(filepath.Join(dir, itoa(i+1)+"-"+mode+"-truth-"+c+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var tr idleTruth
			if err := json.Unmarshal(raw, &tr); err != nil || len(tr.Batch) == 0 {
				t.Fatalf("%s: %v", c, err)
			}
			b := tr.Batch[len(tr.Batch)-1] // the batch of the level's C
			s := sums[mode]
			s[0] += b.GraphStepMs / 3
			s[1] += b.ServedStepMs / 3
			s[2] += tr.Served.MeanTPOTms / 3
			sums[mode] = s
		}
		for k, name := range []string{"captured step", "served decode step", "mean TPOT"} {
			off, on := sums["off"][k], sums["on"][k]
			d := 100 * (on/off - 1)
			t.Logf("%s %s: %.4f ms without the profiler, %.4f with it (%+.2f%%)", c, name, off, on, d)
			if off <= 0 || (k < 2 || c == "c1") && math.Abs(d) >= 1 {
				t.Errorf("%s %s: %+.2f%% with the profiler configured", c, name, d)
			}
		}
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

package fieldrig_test

import (
	"encoding/json"
	"math"
	"os/exec"
	"testing"
)

// truthStatsScript runs truth_stats on records made by hand: two ranks'
// records at M=4 (two repetitions of a step with two all-reduces), one
// request's accounting (two decode-only steps, one mixed step, one prefill
// between steps), and the window that request finished in.
const truthStatsScript = `
import json, truth_stats as ts
r0 = {"m": 4, "allreduce_ms": 1.0, "gather_ms": 0.5, "gemm_ms": 2.0, "eager_step_ms": 5.0, "graph_step_ms": 4.0,
      "_ar_ops": [[0.3, 0.4], [0.5, 0.2]]}
r1 = {"m": 4, "allreduce_ms": 0.8, "gather_ms": 0.5, "gemm_ms": 2.1, "eager_step_ms": 5.0, "_ar_ops": [[0.2, 0.6], [0.1, 0.3]]}
batch = ts.combine_ranks([[r0], [r1]])
ts.add_served_steps(batch, {4: (4.5, 10, 6.0)})
by_m = {b["m"]: b for b in batch}
by_m[8] = {"m": 8, "graph_step_ms": 3.0}
clean, walls, mixed = {4: [0.006, 0.008, 0.007]}, {4: [0.005], 2: [0.004]}, {4: [0.009]}
base = ts.baselines(by_m, clean, walls)
acct = {"periods": 4, "decode": {4: 2}, "mixed": {4: (1, 0.009)}, "period_s": 0.040, "prefill_s": 0.006}
split = ts.split_request(acct, {4: 4}, base, by_m)
window = ts.served_window([(0.010, 4, {4: 4}, acct)], by_m, clean, walls, mixed)
print(json.dumps({"batch": batch, "base": {str(k): v for k, v in base.items()}, "split": split, "window": window,
                  "none": [ts.split_request(dict(acct, periods=0), {}, base, by_m), ts.served_window([], by_m, {}, {}, {})]}))
`

// TestTruthStatsByHand checks /truth's statistics against figures worked
// out by hand: the all-reduce as the smaller rank's time per op, the
// baselines' fallbacks, and a token's wait split into parts that add up to
// its period.
func TestTruthStatsByHand(t *testing.T) {
	py := ""
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(c, "-c", "import statistics").Run() == nil {
			py = c
			break
		}
	}
	if py == "" {
		t.Skip("no python3")
	}
	cmd := exec.Command(py, "-c", truthStatsScript)
	cmd.Dir = "."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("truth_stats: %v\n%s", err, out)
	}
	var got struct {
		Batch  []map[string]any `json:"batch"`
		Base   map[string][]any `json:"base"`
		Split  map[string]float64
		Window map[string]any
		None   []any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	near := func(what string, v any, want float64) {
		t.Helper()
		f, ok := v.(float64)
		if !ok || math.Abs(f-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, v, want)
		}
	}
	b := got.Batch[0]
	// Rep 0: min(0.3,0.2)+min(0.4,0.6) = 0.6; rep 1: min(0.5,0.1)+min(0.2,0.3) = 0.3.
	near("allreduce_ms", b["allreduce_ms"], 0.45)
	near("allreduce_ms_rank0", b["allreduce_ms_rank0"], 1.0)
	near("rest_ms", b["rest_ms"], 5.0-0.95-2.0)
	near("comm_share", b["comm_share"], 0.95/5)
	near("comm_share_graph", b["comm_share_graph"], 0.95/4)
	near("served_rest_ms", b["served_rest_ms"], 6.0-0.95-2.0)
	if _, ok := b["_ar_ops"]; ok {
		t.Error("the per-op times stay in the record")
	}
	for m, want := range map[string][]any{
		"4": {7.0, 5.0, "clean period"},
		"2": {4.0, 4.0, "decode-only step wall (no clean period)"},
		"8": {3.0, 3.0, "captured graph (no decode-only step served)"},
	} {
		g := got.Base[m]
		if len(g) != 3 || g[2] != want[2] {
			t.Errorf("baseline at M=%s = %v, want %v", m, g, want)
			continue
		}
		near("baseline M="+m, g[0], want[0].(float64))
		near("step wall M="+m, g[1], want[1].(float64))
	}
	// Four periods of 40 ms: decode 3 steps × 7 ms, prefill 6 ms between
	// steps + (9 − 5) ms in the mixed step, the rest scheduling.
	s := got.Split
	for k, want := range map[string]float64{
		"period": 10, "decode_step": 5.25, "prefill": 2.5, "prefill_between_steps": 1.5, "prefill_in_mixed_steps": 1,
		"scheduling": 2.25, "decode_device": 4, "allreduce": 0.45, "gather": 0.5, "gemm": 2, "decode_other_device": 1.05,
		"decode_host": 1.25,
	} {
		near("split "+k, s[k], want)
	}
	near("parts' sum", s["decode_step"]+s["prefill"]+s["scheduling"], s["period"])
	w := got.Window
	near("median_tpot_ms", w["median_tpot_ms"], 10)
	near("allreduce_ms_per_token", w["allreduce_ms_per_token"], 0.45)
	near("rest_ms_per_token", w["rest_ms_per_token"], 10-0.45-0.5-2)
	near("mean_padded_batch", w["mean_padded_batch"], 4)
	if wait, _ := w["wait_ms_per_token"].(map[string]any); wait == nil {
		t.Error("the window has no wait_ms_per_token")
	} else {
		near("window scheduling", wait["scheduling"], 2.25)
	}
	if got.None[0] != nil || got.None[1] != nil {
		t.Errorf("no period and no request: %v, want null, null", got.None)
	}
}

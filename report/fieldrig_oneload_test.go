package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestFieldrigTP1OneLoad: `profdeck run` of the rig's campaign on one H200
// in the one-load order (micro and NCCL first, one load with the profiler
// configured, the sweep, the profile), separate prefill, then each profiled
// level swept again and /truth read for exactly those requests
// (scripts/fieldrig/experiment-tp1-variants.sh). The one budget's decode
// step, GEMM, device time and prefill each within 15% of /truth (a part
// under a hundredth of TPOT within a hundredth), the parts within 5% of the
// mean TPOT, the client's and /truth's.
func TestFieldrigTP1OneLoad(t *testing.T) {
	dir := filepath.Join("..", "scripts", "fieldrig", "testdata", "h200-tp1-variants", "separate")
	rows := tp1SameRequestsIn(t, []string{"separate"},
		func(string) string { return filepath.Join(dir, "fieldrig.journal.jsonl") },
		func(_, what string, c int) string { return filepath.Join(dir, fmt.Sprintf("%s-c%d.json", what, c)) })
	var table strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&table, "| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f / %.2f |\n", r.key,
			r.decode, r.tDecode, r.gemm, r.tGEMM, r.dev, r.tDev, r.host, r.tHost, r.prefill, r.tPrefill, r.sum, r.tpot, r.tTPOT)
		for _, p := range []struct {
			name      string
			got, want float64
		}{{"decode step", r.decode, r.tDecode}, {"GEMM", r.gemm, r.tGEMM}, {"device time of the decode step", r.dev, r.tDev}, {"prefill", r.prefill, r.tPrefill}} {
			if !within15(p.got, p.want, r.tTPOT) {
				t.Errorf("%s: %s %.2f against the engine's %.2f (%+.0f%%)", r.key, p.name, p.got, p.want, pctOff(p.got, p.want))
			}
		}
		for _, tp := range []float64{r.tpot, r.tTPOT} {
			if d := pctOff(r.sum, tp); math.Abs(d) > 5 {
				t.Errorf("%s: the parts sum to %.2f against a mean TPOT of %.2f (%+.1f%%)", r.key, r.sum, tp, d)
			}
		}
	}
	t.Logf("\n| mode/C | decode step | GEMM | device | host gaps | prefill | parts / TPOT / /truth's TPOT |\n%s", table.String())
}

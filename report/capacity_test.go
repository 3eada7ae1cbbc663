package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// knownCurve is a closed-loop sweep whose numbers are round, so that the
// plans below can be worked out by hand: p90 TPOT 10, 20, 30, 40, 60 ms
// at C=1…16, request throughput 0.5 … 4 req/s, mean E2E 2 … 4 s.
func knownCurve() Sweep {
	mk := func(c int, rps, e2e, tpot float64) phases.LevelResult {
		return phases.LevelResult{Concurrency: c, Completed: 64, RequestThroughput: rps, OutputThroughput: 128 * rps,
			MeanE2ELms: e2e, MedianE2ELms: e2e, P90E2ELms: e2e * 1.1, P99E2ELms: e2e * 1.2,
			MedianTPOTms: tpot * 0.9, P90TPOTms: tpot, P99TPOTms: tpot * 1.1,
			MedianTTFTms: 100, P90TTFTms: 150, P99TTFTms: 200}
	}
	return Sweep{Path: "known.json", Source: "sweep JSON", Levels: []phases.LevelResult{
		mk(1, 0.5, 2000, 10), mk(2, 1.0, 2000, 20), mk(4, 1.8, 2200, 30), mk(8, 3.0, 2700, 40), mk(16, 4.0, 4000, 60)},
		Deployment: &phases.Deployment{TP: 8, Nodes: 1, GPUs: 8, Source: "the launch command"}}
}

func capNear(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// TestCapacityRateHandWorked: tpot=50ms for 90% is crossed halfway between
// C=8 (p90 40 ms) and C=16 (60 ms): C*=12, 3.5 req/s, E2E 3.35 s. With 20%
// headroom one replica is planned at 2.8 req/s; 10 req/s needs 10/2.8 =
// 3.57, so 4 replicas, 32 GPUs.
func TestCapacityRateHandWorked(t *testing.T) {
	p, err := PlanCapacity(knownCurve(), CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Replica
	if r == nil || !capNear(r.Load, 12) || !capNear(r.RequestRate, 3.5) || !capNear(r.MeanE2ELms, 3350) || !capNear(r.PlannedRequestRate, 2.8) {
		t.Fatalf("replica = %+v, want C=12 at 3.5 req/s, E2E 3350 ms, planned 2.8", r)
	}
	if *p.Replicas != 4 || *p.GPUs != 32 || *p.Nodes != 4 {
		t.Fatalf("replicas %d gpus %d nodes %d, want 4, 32, 4", *p.Replicas, *p.GPUs, *p.Nodes)
	}
	if !p.Curve.Interpolated || *p.Curve.Met != 8 || *p.Curve.Missed != 16 {
		t.Fatalf("curve = %+v", p.Curve)
	}
	if !capNear(p.Traffic.Concurrency, 10*3.35) {
		t.Fatalf("Little's law: concurrency %g, want 33.5", p.Traffic.Concurrency)
	}
	all := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"interpolated", "closed loop", "figure by figure"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(p.Text, "4 replica(s) × 8 GPUs (TP 8) = 32 GPUs") {
		t.Errorf("text: %s", p.Text)
	}
}

// TestCapacityUsersLittle: 100 users thinking 30 s at E2E 3.35 s keep
// 100 × 3.35 / 33.35 = 10.045 requests in flight; a replica is planned at
// C = 12 × 0.8 = 9.6, so 2 replicas.
func TestCapacityUsersLittle(t *testing.T) {
	p, err := PlanCapacity(knownCurve(), CapacityAsk{Users: 100, Think: 30 * time.Second, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if !capNear(p.Traffic.Concurrency, 100*3.35/33.35) || !capNear(p.Traffic.RequestRate, 100/33.35) {
		t.Fatalf("traffic = %+v", p.Traffic)
	}
	if !capNear(p.Replica.PlannedLoad, 9.6) || *p.Replicas != 2 {
		t.Fatalf("planned C %g, replicas %d; want 9.6 and 2", p.Replica.PlannedLoad, *p.Replicas)
	}
	if !strings.Contains(p.Traffic.Little, "users × E2E / (E2E + think)") {
		t.Errorf("Little's law not stated: %q", p.Traffic.Little)
	}
	// Without headroom: 10.045 / 12 < 1, one replica.
	p, err = PlanCapacity(knownCurve(), CapacityAsk{Users: 100, Think: 30 * time.Second, SLO: "tpot=50ms"})
	if err != nil || *p.Replicas != 1 {
		t.Fatalf("no headroom: %v %v", err, p.Replicas)
	}
}

// TestCapacityBeyondCurve: an SLO every level meets is not extrapolated:
// the top level (4 req/s, planned 3.2) is the replica, 10/3.2 = 3.1 → 4,
// and the warning says so.
func TestCapacityBeyondCurve(t *testing.T) {
	p, err := PlanCapacity(knownCurve(), CapacityAsk{Rate: 10, SLO: "tpot=100ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Curve.Interpolated || !capNear(p.Replica.RequestRate, 4) || *p.Replicas != 4 || p.Curve.Missed != nil {
		t.Fatalf("plan = %+v %+v", p.Replica, p.Curve)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "every measured level met the SLO") {
		t.Errorf("the curve's end not said: %v", p.Warnings)
	}
}

// TestCapacityNoneMeets: when the lightest level misses, there is no
// answer, and the text says which figure missed.
func TestCapacityNoneMeets(t *testing.T) {
	p, err := PlanCapacity(knownCurve(), CapacityAsk{Rate: 1, SLO: "tpot=5ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Replicas != nil || p.Replica != nil || !strings.Contains(p.Text, "C=1") || !strings.Contains(p.Text, "p90 TPOT 10.0 ms") {
		t.Fatalf("plan = %+v", p)
	}
}

// TestCapacityGoodput: with the sweep's own SLO its per-request verdict
// says which levels met it (good share 0.95 at C=8, 0.75 at C=16 against
// 0.9). Between them the p90 TPOT, which tells them apart as the verdict
// does, interpolates: C=12, 3.5 req/s. When the percentile does not (p90
// 48 ms at C=16, under the bound, though only 75% met every bound), the
// share interpolates: t = 0.05/0.2 = 0.25, C=10, 3.25 req/s.
func TestCapacityGoodput(t *testing.T) {
	sw := knownCurve()
	sw.SLO, sw.SLOShare = "tpot=50ms", 0.9
	shares := []float64{1, 1, 0.99, 0.95, 0.75}
	for i := range sw.Levels {
		sw.Levels[i].Goodput = &phases.Goodput{Share: shares[i], Met: shares[i] >= 0.9}
	}
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 10, Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.SLO.JudgedBy != "goodput" || p.SLO.From != "the sweep's" || !capNear(p.Replica.Load, 12) || *p.Replicas != 4 {
		t.Fatalf("slo %+v replica %+v", p.SLO, p.Replica)
	}
	sw.Levels[4].P90TPOTms = 48
	p, _ = PlanCapacity(sw, CapacityAsk{Rate: 10, Headroom: 0.2})
	if !capNear(p.Replica.Load, 10) || !capNear(p.Replica.RequestRate, 3.25) || p.Curve.Points[4].Met {
		t.Fatalf("replica %+v", p.Replica)
	}
	// 10 / (3.25 × 0.8) = 3.85 → 4.
	if *p.Replicas != 4 {
		t.Fatalf("replicas %d, want 4", *p.Replicas)
	}
	// Another SLO given: percentiles again.
	p, _ = PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=45ms", Headroom: 0.2})
	if p.SLO.JudgedBy != "percentiles" {
		t.Fatalf("judged by %s", p.SLO.JudgedBy)
	}
}

// TestCapacityFailuresCount: failures beyond the share that may miss make
// a level miss, without interpolation.
func TestCapacityFailuresCount(t *testing.T) {
	sw := knownCurve()
	sw.Levels[4].P90TPOTms = 45 // would meet tpot=50ms by latency
	sw.Levels[4].Failed = 16    // 16/80 = 20% failed, 10% may
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	// C=8 excess -0.2, C=16 excess 0.2/0.1-1 = 1: t = 0.2/1.2 = 1/6.
	if !capNear(p.Replica.Load, 8+8.0/6) || !strings.Contains(strings.Join(p.Warnings, "\n"), "failed") {
		t.Fatalf("replica %+v warnings %v", p.Replica, p.Warnings)
	}
}

// TestCapacityDeployment: flags replace the record and say so; without
// either the sampler's GPU count is used; without any, replicas only.
func TestCapacityDeployment(t *testing.T) {
	sw := knownCurve()
	p, _ := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2, TP: 16, Nodes: 2})
	if *p.GPUs != 64 || *p.Nodes != 8 || !strings.Contains(strings.Join(p.Warnings, "\n"), "as given") {
		t.Fatalf("gpus %d nodes %d %v", *p.GPUs, *p.Nodes, p.Warnings)
	}
	sw.Deployment, sw.HostGPUs = nil, 4
	p, _ = PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if *p.GPUs != 16 {
		t.Fatalf("gpus %d, want 4 × 4", *p.GPUs)
	}
	sw.HostGPUs = 0
	p, _ = PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if p.GPUs != nil || *p.Replicas != 4 {
		t.Fatalf("gpus %v", p.GPUs)
	}
}

// TestCapacityAskChecked: bad asks are refused with the input named.
func TestCapacityAskChecked(t *testing.T) {
	for _, a := range []CapacityAsk{{}, {Rate: 1, Users: 2}, {Rate: -1}, {Rate: math.NaN()}, {Rate: 1, Headroom: 1},
		{Users: 1, Think: -time.Second}, {Rate: 1, SLO: "tpot=fast"}, {Rate: 1, Think: time.Second}} {
		if _, err := PlanCapacity(knownCurve(), a); err == nil {
			t.Errorf("%+v: accepted", a)
		}
	}
	sw := knownCurve()
	if _, err := PlanCapacity(sw, CapacityAsk{Rate: 1}); err == nil || !strings.Contains(err.Error(), "no SLO") {
		t.Errorf("no SLO: %v", err)
	}
}

// TestCapacityPercentileChoice: share 0.95 is judged on p95 when recorded,
// else on p99 (stricter), said.
func TestCapacityPercentileChoice(t *testing.T) {
	sw := knownCurve()
	p, _ := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms,share=0.95"})
	if _, ok := p.Curve.Points[0].Figures["p99_tpot_ms"]; !ok || !strings.Contains(strings.Join(p.Warnings, "\n"), "no p95 of TPOT") {
		t.Fatalf("figures %v warnings %v", p.Curve.Points[0].Figures, p.Warnings)
	}
	for i := range sw.Levels {
		sw.Levels[i].Percentiles = map[string]float64{"p95_tpot_ms": sw.Levels[i].P90TPOTms * 1.05}
	}
	p, _ = PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms,share=0.95"})
	if _, ok := p.Curve.Points[0].Figures["p95_tpot_ms"]; !ok {
		t.Fatalf("figures %v", p.Curve.Points[0].Figures)
	}
}

// Runs of one load (a repeat, or a search's) are one point: met only if
// every run met; the sweep's own search is cited beside the plan.
func TestCapacityRunsAndSearch(t *testing.T) {
	sw := knownCurve()
	again := sw.Levels[3] // C=8 again, this time over the bound
	again.P90TPOTms, again.RequestThroughput = 55, 2.8
	sw.Levels = append(sw.Levels, again)
	up := 16.0
	sw.Search = &phases.Search{Done: true, SLO: "tpot=50ms", RequiredShare: 0.9, Lower: 4, Upper: &up, Runs: 7, StoppedBecause: "slo"}
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Curve.Points) != 5 || p.Curve.Points[3].Met || !capNear(p.Curve.Points[3].RequestThroughput, 2.9) {
		t.Fatalf("C=8 merged: %+v", p.Curve.Points[3])
	}
	// C=4 (p90 30 ms) met, C=8 (worst 55 ms) missed: 4 + 4 × 0.4/0.5 = 7.2.
	if !capNear(p.Replica.Load, 7.2) {
		t.Fatalf("SLO point %g, want 7.2", p.Replica.Load)
	}
	all := strings.Join(p.Warnings, "\n")
	if !strings.Contains(all, "C=8 ran 2 times and met the SLO in 1") || !strings.Contains(all, "search put the limit between C=4 (met) and C=16 (missed) in 7 runs") {
		t.Errorf("warnings:\n%s", all)
	}
}

// A missed level that served less than the met one below it does not
// lower the replica's rate below what the met level measured.
func TestCapacityNoDropBelowMet(t *testing.T) {
	sw := knownCurve()
	sw.Levels[4].RequestThroughput = 2 // C=16 served less than C=8's 3
	p, _ := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if !capNear(p.Replica.Load, 12) || !capNear(p.Replica.RequestRate, 3) {
		t.Fatalf("replica %+v, want C=12 at C=8's 3 req/s", p.Replica)
	}
}

// From a journal: the sweep's start journalled its SLO, share and
// deployment (what a macro.Sweep's params carry), so a plan read from the
// journal judges on goodput and counts the recorded GPUs.
func TestCapacityFromJournal(t *testing.T) {
	sw := knownCurve()
	kv := []any{phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro", Params: map[string]any{
		"slo": "tpot=50ms", "slo_share": 0.9,
		"deployment": phases.Deployment{TP: 4, PP: 2, Nodes: 2, GPUs: 8, Source: "the launch command"}}}}
	shares := []float64{1, 1, 1, 0.95, 0.5}
	for i, l := range sw.Levels {
		l.Goodput = &phases.Goodput{Share: shares[i], Met: shares[i] >= 0.9}
		kv = append(kv, phases.KindMacroLevel, l)
	}
	kv = append(kv, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "macro"})
	p := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range budgetEvents(kv...) {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	got, err := LoadSweep(p)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanCapacity(got, CapacityAsk{Rate: 10, Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	// C=12 by the p90 TPOT between C=8 and C=16: 3.5 req/s, planned 2.8: 4 replicas of TP 4 × PP 2 on 2 nodes.
	if plan.SLO.JudgedBy != "goodput" || *plan.Replicas != 4 || *plan.GPUs != 32 || *plan.Nodes != 8 ||
		!strings.Contains(plan.Text, "TP 4 × PP 2") {
		t.Fatalf("plan %+v: %s", plan.SLO, plan.Text)
	}
}

// An open-loop sweep is read by request rate: p90 TTFT 300 ms at 4 req/s
// and 900 ms at 8 against ttft=500ms cross a third of the way: 5.33 req/s
// asked, 3.9 + 2.6/3 = 4.767 served; with 20% headroom 3.813 per replica,
// so 20 req/s needs 6 replicas, and no closed-loop warning.
func TestCapacityOpenLoop(t *testing.T) {
	mk := func(rate, rps, ttft float64) phases.LevelResult {
		return phases.LevelResult{Rate: rate, Completed: 50, RequestThroughput: rps, OutputThroughput: 100 * rps,
			MeanE2ELms: 1000 + ttft, P90TTFTms: ttft, MedianTTFTms: ttft / 2, P99TTFTms: ttft * 1.5}
	}
	sw := Sweep{Path: "open.json", Levels: []phases.LevelResult{mk(2, 2, 100), mk(8, 6.5, 900), mk(4, 3.9, 300)},
		Deployment: &phases.Deployment{TP: 1, Nodes: 1}}
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 20, SLO: "ttft=500ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Curve.Unit != "request_rate" || !capNear(p.Replica.Load, 4+4.0/3) || !capNear(p.Replica.RequestRate, 3.9+2.6/3) || *p.Replicas != 6 || *p.GPUs != 6 {
		t.Fatalf("curve %s replica %+v replicas %d", p.Curve.Unit, p.Replica, *p.Replicas)
	}
	if strings.Contains(strings.Join(p.Warnings, "\n"), "closed loop") || !strings.Contains(p.Text, "at 5.33 req/s") {
		t.Errorf("text %s warnings %v", p.Text, p.Warnings)
	}
}

// A replica that served nothing at its SLO point, or an absurd traffic,
// gives no answer rather than an overflowed count.
func TestCapacityNoAbsurdAnswer(t *testing.T) {
	sw := knownCurve()
	for i := range sw.Levels {
		sw.Levels[i].RequestThroughput = 0
	}
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil || p.Replicas != nil || !strings.HasPrefix(p.Text, "no answer") {
		t.Fatalf("%v %+v", err, p)
	}
	p, _ = PlanCapacity(knownCurve(), CapacityAsk{Rate: 1e300, SLO: "tpot=50ms", Headroom: 0.2})
	if p.Replicas != nil {
		t.Fatalf("1e300 req/s: %d replicas", *p.Replicas)
	}
	p, _ = PlanCapacity(knownCurve(), CapacityAsk{Users: 1 << 40, Think: time.Second, SLO: "tpot=50ms"})
	if p.Replicas != nil {
		t.Fatalf("2^40 users: %d replicas", *p.Replicas)
	}
}

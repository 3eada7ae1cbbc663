package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// speedCurve is a speed search's replays of one trace whose mean rate as
// recorded is 3 req/s: speeds 1/8×, 1/4×, 1/2× and 1× with p90 TPOT 20,
// 35, 45 and 70 ms, each level's rate 3 req/s times its speed.
func speedCurve() Sweep {
	mk := func(speed, tpot float64) phases.LevelResult {
		rate := 3 * speed
		return phases.LevelResult{Rate: rate, Completed: 64, RequestThroughput: rate, OutputThroughput: 100 * rate,
			MeanE2ELms: 2000, MedianE2ELms: 2000, P90E2ELms: 2200, P99E2ELms: 2400,
			MedianTPOTms: tpot * 0.9, P90TPOTms: tpot, P99TPOTms: tpot * 1.1, MedianTTFTms: 100, P90TTFTms: 150, P99TTFTms: 200,
			Schedule: &phases.Schedule{Arrivals: "mooncake trace", RequestedRate: rate, TraceSpeed: speed}}
	}
	return Sweep{Path: "speeds.json", Source: "sweep JSON", Levels: []phases.LevelResult{mk(0.125, 20), mk(0.25, 35), mk(0.5, 45), mk(1, 70)},
		Deployment: &phases.Deployment{TP: 4, Nodes: 1, GPUs: 4, Source: "the launch command"},
		Trace:      &macro.TraceSummary{File: "traces/day.jsonl"}}
}

// TestCapacityTraceSpeedHandWorked: tpot=50ms for 90% is crossed a fifth
// of the way from 1/2× (p90 45 ms, 10% under) to 1× (70 ms, 40% over):
// S* = 0.5 + 0.2 × 0.5 = 0.6×. With 20% headroom one replica replays the
// trace at 0.48×; the trace as recorded (1×) needs 1/0.48 = 2.08, so 3
// replicas of TP 4: 12 GPUs. (Its busiest minute as a rate would not be
// read: the replays hold its bursts.)
func TestCapacityTraceSpeedHandWorked(t *testing.T) {
	p, err := PlanCapacity(speedCurve(), CapacityAsk{Rate: 9, Trace: "day.jsonl", SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Replica
	if p.Curve.Unit != "trace_speed" || r == nil || !capNear(r.Load, 0.6) || !capNear(r.PlannedLoad, 0.48) {
		t.Fatalf("curve %s, replica %+v: want the SLO point at 0.6×, planned 0.48×", p.Curve.Unit, r)
	}
	if *p.Replicas != 3 || *p.GPUs != 12 || !capNear(p.Traffic.RequestRate, 3) || p.Traffic.Trace != "day.jsonl" {
		t.Fatalf("replicas %d, GPUs %d, traffic %+v: want 3, 12 at 3 req/s", *p.Replicas, *p.GPUs, p.Traffic)
	}
	for _, want := range []string{"the trace day.jsonl as recorded (1×, 3 req/s on average)", "3 replica(s) × 4 GPUs (TP 4) = 12 GPUs",
		"replays it at up to 0.6× within the SLO", "planned at 0.48×"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text lacks %q: %s", want, p.Text)
		}
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "interpolated: the SLO point 0.6×") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// A sweep that did not replay a trace is planned on the trace's busiest
// minute as a rate, said.
func TestCapacityTraceOnRandomSweep(t *testing.T) {
	p, err := PlanCapacity(knownCurve(), CapacityAsk{Rate: 10, Trace: "day.jsonl", SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if *p.Replicas != 4 || !strings.Contains(strings.Join(p.Warnings, "\n"), "not replays of a trace") {
		t.Fatalf("replicas %d, warnings %q", *p.Replicas, p.Warnings)
	}
}

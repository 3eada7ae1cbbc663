package report

import (
	"math"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// A level whose throughput or latency is negative or not finite is no
// measurement: the plan is refused naming the level and the field (it
// answered "one replica serves -5 req/s").
func TestCapacityRefusesImpossibleLevels(t *testing.T) {
	for _, bad := range []func(*phases.LevelResult){
		func(l *phases.LevelResult) { l.RequestThroughput = -5 },
		func(l *phases.LevelResult) { l.RequestThroughput = math.Inf(1) },
		func(l *phases.LevelResult) { l.OutputThroughput = math.NaN() },
		func(l *phases.LevelResult) { l.MeanE2ELms = -1 },
	} {
		sw := knownCurve()
		bad(&sw.Levels[2])
		p, err := PlanCapacity(sw, CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2})
		if err == nil || !strings.Contains(err.Error(), "C=4") {
			t.Errorf("%+v: plan %+v, err %v", sw.Levels[2], p, err)
		}
	}
}

// TP, PP and nodes that are not positive, overflow, or do not fit are
// refused (it answered "−9223372036854775808 GPUs", "176 replicas = 0
// GPUs", "TP 1 = 1 GPUs" for TP 0 or −8, "12 GPUs on 14 nodes").
func TestCapacityRefusesImpossibleDeployments(t *testing.T) {
	ask := CapacityAsk{Rate: 10, SLO: "tpot=50ms", Headroom: 0.2}
	for _, c := range []struct {
		name string
		d    *phases.Deployment
		tp   int
		pp   int
		n    int
		want string
	}{
		{"recorded TP 0", &phases.Deployment{TP: 0, Nodes: 1}, 0, 0, 0, "TP 0"},
		{"recorded TP -8", &phases.Deployment{TP: -8, Nodes: 1}, 0, 0, 0, "TP -8"},
		{"recorded nodes -1", &phases.Deployment{TP: 8, Nodes: -1}, 0, 0, 0, "-1 nodes"},
		{"flags overflow", &phases.Deployment{TP: 8, Nodes: 1}, 1 << 20, 1 << 20, 0, "more than"},
		{"tp too large", &phases.Deployment{TP: 8, Nodes: 1}, math.MaxInt64, 0, 0, "at most"},
		{"recorded overflow", &phases.Deployment{TP: 1 << 31, PP: 1 << 31, DP: 4, Nodes: 1}, 0, 0, 0, "more than"},
		{"12 GPUs on 14 nodes", &phases.Deployment{TP: 4, PP: 3, Nodes: 1}, 0, 0, 14, "cannot span 14 nodes"},
	} {
		sw := knownCurve()
		sw.Deployment = c.d
		a := ask
		a.TP, a.PP, a.Nodes = c.tp, c.pp, c.n
		p, err := PlanCapacity(sw, a)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			if p != nil && p.GPUs != nil {
				t.Errorf("%s: %d GPUs (%s), err %v", c.name, *p.GPUs, p.Text, err)
			} else {
				t.Errorf("%s: err %v, want %q", c.name, err, c.want)
			}
		}
	}
}

// Throughput that falls past a level that met the SLO: the plan rests on
// the level that served more, and says the curve is not monotone (it took
// the fallen level: 25 replicas instead of 2).
func TestCapacityNotMonotone(t *testing.T) {
	sw := knownCurve()
	sw.Levels[3].RequestThroughput = 0.375 // C=8 met the SLO at an eighth of C=4's 1.8… and of its own 3
	p, err := PlanCapacity(sw, CapacityAsk{Rate: 2, SLO: "tpot=50ms", Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Replica.Load != 4 || !capNear(p.Replica.RequestRate, 1.8) || *p.Replicas != 2 {
		t.Fatalf("replica %+v, %d replicas: want C=4 at 1.8 req/s, 2 replicas", p.Replica, *p.Replicas)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "throughput is not monotone: C=8 served 0.375 req/s, below the 1.8 req/s of C=4") {
		t.Fatalf("warnings %q", p.Warnings)
	}
}

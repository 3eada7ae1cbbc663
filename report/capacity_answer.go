package report

import (
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
)

// replica finds one replica's SLO point on the curve: the last level that
// met the SLO before the first that did not, moved towards the latter by
// linear interpolation of the judged figure when both can be read.
func (p *CapacityPlan) replica(warn func(string, ...any)) {
	pts, unit := p.Curve.Points, p.Curve.Unit
	miss := -1
	for i, pt := range pts {
		if !pt.Met {
			miss = i
			break
		}
	}
	if miss == 0 {
		return
	}
	a := pts[len(pts)-1]
	if miss < 0 {
		warn("every measured level met the SLO: one replica's limit lies above %s, which the answer takes as its capacity "+
			"(not extrapolated), so it may ask for more replicas than needed; sweep higher levels to find the limit", loadName(a.Load, unit))
	} else {
		a = pts[miss-1]
		p.Curve.Missed = new(pts[miss].Load)
		for _, later := range pts[miss+1:] {
			if later.Met {
				warn("%s met the SLO again after %s missed it: noise between runs; the first miss bounds the answer (--repeat would settle it)",
					loadName(later.Load, unit), loadName(pts[miss].Load, unit))
				break
			}
		}
	}
	p.Curve.Met = new(a.Load)
	best := bestMet(pts, a)
	if best.Load != a.Load {
		warn("throughput is not monotone: %s served %.3g req/s, below the %.3g req/s of %s, which met the SLO too; "+
			"the answer rests on %s, not on the fallen level (a server that slows under more load: look at its queue and preemptions)",
			loadName(a.Load, unit), a.RequestThroughput, best.RequestThroughput, loadName(best.Load, unit), loadName(best.Load, unit))
	}
	r := &CapacityReplica{Load: best.Load, RequestRate: best.RequestThroughput, OutputTokS: best.OutputThroughput, MeanE2ELms: best.MeanE2ELms}
	if miss > 0 && best.Load == a.Load {
		p.interpolate(r, a, pts[miss], warn)
	}
	a = best
	if a.Few {
		warn("%s, the level the answer rests on, completed fewer than %d requests: its percentiles are rough", loadName(a.Load, unit), phases.MinRequests)
	}
	if a.Client {
		warn("%s was limited by this client, not the server: the replica may serve more than measured", loadName(a.Load, unit))
	}
	r.PlannedLoad = r.Load * (1 - p.Headroom)
	r.PlannedRequestRate = r.RequestRate * (1 - p.Headroom)
	p.Replica = r
}

// fallenShare is how far below an earlier level's throughput a level that
// met the SLO must fall for the plan to say throughput is not monotone and
// rest on the earlier level (smaller drops are noise between levels).
const fallenShare = 0.9

// bestMet is the level the answer rests on: a, the last that met the SLO,
// unless an earlier level that met it served clearly more (the throughput
// fell past it).
func bestMet(pts []CurvePoint, a CurvePoint) CurvePoint {
	best := a
	for _, pt := range pts {
		if pt.Load >= a.Load {
			break
		}
		if pt.Met && pt.RequestThroughput > best.RequestThroughput {
			best = pt
		}
	}
	if a.RequestThroughput >= fallenShare*best.RequestThroughput {
		return a
	}
	return best
}

// interpolate moves the SLO point from a (met) towards b (missed) where
// the judged figure crosses its bound on the straight line between them:
// the worst percentile against its bound when it tells the two levels
// apart as the verdict does, else the verdict's own figure.
func (p *CapacityPlan) interpolate(r *CapacityReplica, a, b CurvePoint, warn func(string, ...any)) {
	unit := p.Curve.Unit
	ea, eb, wa, wb := a.excess, b.excess, a.why, b.why
	if a.pexcess <= 0 && b.pexcess > 0 && !math.IsInf(b.pexcess, 0) {
		ea, eb, wa, wb = a.pexcess, b.pexcess, a.pwhy, b.pwhy
	}
	switch {
	case math.IsInf(eb, 0) || math.IsInf(ea, 0) || eb <= ea:
		warn("not interpolated: %s missed the SLO (%s) in a way no straight line from %s reaches; the answer uses %s as measured",
			loadName(b.Load, unit), wb, loadName(a.Load, unit), loadName(a.Load, unit))
		return
	case b.Client:
		warn("not interpolated: %s, which missed the SLO, was limited by this client; the answer uses %s as measured",
			loadName(b.Load, unit), loadName(a.Load, unit))
		return
	}
	t := -ea / (eb - ea)
	lerp := func(x, y float64) float64 { return x + t*(y-x) }
	r.Load = lerp(a.Load, b.Load)
	// A level that met the SLO served what it measured: a lower
	// throughput at the level above (noise, or a queue) does not lower it.
	r.RequestRate = max(a.RequestThroughput, lerp(a.RequestThroughput, b.RequestThroughput))
	r.OutputTokS = max(a.OutputThroughput, lerp(a.OutputThroughput, b.OutputThroughput))
	r.MeanE2ELms = lerp(a.MeanE2ELms, b.MeanE2ELms)
	p.Curve.Interpolated = true
	warn("interpolated: the SLO point %s (%.3g req/s) lies between %s, which met it (%s), and %s, which missed it (%s), "+
		"read on a straight line between the two; %s's measured %.3g req/s is the floor",
		loadName(r.Load, unit), r.RequestRate, loadName(a.Load, unit), wa, loadName(b.Load, unit), wb,
		loadName(a.Load, unit), a.RequestThroughput)
}

// maxReplicas is the most replicas a plan answers; past it the measured
// replica served next to nothing for the traffic (or the traffic is absurd).
const maxReplicas = 1e7

// answer turns the traffic into replicas, GPUs and nodes.
func (p *CapacityPlan) answer(ask CapacityAsk, warn func(string, ...any)) {
	t := &p.Traffic
	t.Rate, t.Users, t.ThinkS = ask.Rate, ask.Users, ask.Think.Seconds()
	r := p.Replica
	if r == nil {
		first := p.Curve.Points[0]
		p.Text = fmt.Sprintf("no measured level met the SLO (%s for %.0f%% of requests): even the lightest, %s, missed it (%s); "+
			"no number of replicas of this deployment serves the traffic within it", p.SLO.Spec, 100*p.SLO.Share,
			loadName(first.Load, p.Curve.Unit), first.why)
		return
	}
	e := r.MeanE2ELms / 1000
	closed := p.Curve.Unit == "concurrency"
	var need float64
	if ask.Users > 0 {
		z := ask.Think.Seconds()
		t.RequestRate = float64(ask.Users) / (e + z)
		t.Concurrency = float64(ask.Users) * e / (e + z)
		t.Little = fmt.Sprintf("Little's law: concurrency = users × E2E / (E2E + think) = %d × %.3g s / (%.3g s + %.3g s) = %.4g requests in flight, "+
			"%.4g req/s (E2E is the mean at the replica's SLO point, the slowest the SLO allows: an upper estimate)",
			ask.Users, e, e, z, t.Concurrency, t.RequestRate)
		need = t.RequestRate / r.PlannedRequestRate
		if closed {
			need = t.Concurrency / r.PlannedLoad
		}
	} else {
		t.RequestRate = ask.Rate
		t.Concurrency = ask.Rate * e
		t.Little = fmt.Sprintf("Little's law: concurrency = rate × E2E = %.4g req/s × %.3g s = %.4g requests in flight", ask.Rate, e, t.Concurrency)
		need = ask.Rate / r.PlannedRequestRate
		if closed {
			warn("the curve is closed loop (a fixed number of requests in flight): arrivals at random at the same mean rate " +
				"queue more at times; an open-loop sweep (--rate) measures that")
		}
	}
	if e <= 0 {
		warn("the SLO point has no mean E2E: Little's law cannot be applied")
	}
	if math.IsNaN(need) || math.IsInf(need, 0) || need > maxReplicas {
		p.Text = fmt.Sprintf("no answer: %s over one replica's planned %.3g req/s (%s) is not a number of replicas this plan can give",
			trafficText(ask), r.PlannedRequestRate, loadName(r.Load, p.Curve.Unit))
		return
	}
	p.replicas(trafficText(ask), need, warn)
	p.Text += fmt.Sprintf(". One replica serves %.3g req/s (%.0f output tok/s) within the SLO at %s, planned at %.3g req/s",
		r.RequestRate, r.OutputTokS, loadName(r.Load, p.Curve.Unit), r.PlannedRequestRate)
	if closed {
		p.Text += fmt.Sprintf(" (C≈%.1f)", r.PlannedLoad)
	}
	p.Text += "."
}

// replicas sets the answer's replicas for need replicas' worth of load
// (rounded up, at least one) and their GPUs and nodes, and starts the
// answer's text with the traffic in words.
func (p *CapacityPlan) replicas(traffic string, need float64, warn func(string, ...any)) int {
	n := max(1, int(math.Ceil(need-1e-9)))
	p.Replicas = &n
	if need < 1 {
		warn("the traffic is %.0f%% of one replica's planned load: one replica, mostly idle", 100*need)
	}
	p.Text = fmt.Sprintf("%s within %s (%.0f%% of requests) with %.0f%% headroom: %d replica(s)",
		traffic, p.SLO.Spec, 100*p.SLO.Share, 100*p.Headroom, n)
	if d := p.Deployment; d != nil {
		g, nodes := n*d.GPUs, n*max(d.Nodes, 1)
		p.GPUs, p.Nodes = &g, &nodes
		p.Text += fmt.Sprintf(" × %d GPUs (%s) = %d GPUs on %d node(s)", d.GPUs, parallelText(*d), g, nodes)
	}
	return n
}

func trafficText(ask CapacityAsk) string {
	if ask.Users > 0 {
		return fmt.Sprintf("%d users thinking %s between requests", ask.Users, ask.Think)
	}
	return fmt.Sprintf("%.4g req/s", ask.Rate)
}

// parallelText is a replica's parallel sizes: TP 8, TP 8 × PP 2.
func parallelText(d phases.Deployment) string {
	s := fmt.Sprintf("TP %d", max(d.TP, 1))
	if d.PP > 1 {
		s += fmt.Sprintf(" × PP %d", d.PP)
	}
	if d.DP > 1 {
		s += fmt.Sprintf(" × DP %d", d.DP)
	}
	return s
}

// deployment is the replica the plan counts GPUs for: the flags over the
// sweep's record, else the GPUs the sweep's sampler counted.
func deployment(sw Sweep, ask CapacityAsk, warn func(string, ...any)) (*phases.Deployment, error) {
	var d *phases.Deployment
	if sw.Deployment != nil {
		if ask.TP == 0 {
			if err := checkDeployment(*sw.Deployment, sw.Path+": the recorded deployment"); err != nil {
				return nil, err
			}
		}
		d = new(*sw.Deployment)
	}
	if ask.TP > 0 || ask.PP > 0 || ask.Nodes > 0 {
		if d == nil {
			d = &phases.Deployment{Nodes: 1}
		}
		was := *d
		if ask.TP > 0 {
			d.TP = ask.TP
		}
		if ask.PP > 0 {
			d.PP = ask.PP
		}
		if ask.Nodes > 0 {
			d.Nodes = ask.Nodes
		}
		if sw.Deployment != nil && (was.TP != d.TP || was.PP != d.PP || was.Nodes != d.Nodes) {
			warn("the sweep recorded %s on %d node(s) (from %s); the plan counts %s on %d as given",
				parallelText(was), was.Nodes, was.Source, parallelText(*d), d.Nodes)
		}
		d.Source = "the flags given"
	}
	if d == nil && sw.HostGPUs > 0 {
		d = &phases.Deployment{TP: sw.HostGPUs, Nodes: 1, Source: "the GPUs the sweep's sampler counted on the host"}
		warn("the sweep recorded no deployment: one replica is taken as the host's %d GPUs (give --tp and --nodes to say otherwise)", sw.HostGPUs)
	}
	if d == nil {
		warn("the sweep recorded no deployment and none was given: replicas only, no GPU count (give --tp, and --nodes for several)")
		return nil, nil
	}
	if err := checkDeployment(*d, "the deployment ("+d.Source+")"); err != nil {
		return nil, err
	}
	d.GPUs = d.ReplicaGPUs()
	d.Nodes = max(d.Nodes, 1)
	if d.Source == "the default model.tp" {
		warn("TP %d is the campaign's default model.tp, which nobody set: check it (or give --tp)", d.TP)
	}
	if sw.HostGPUs > 0 && d.GPUs > sw.HostGPUs*d.Nodes {
		warn("one replica counts %d GPUs (%s) but the sweep's sampler saw %d on the head node", d.GPUs, parallelText(*d), sw.HostGPUs)
	}
	if d.GPUs%d.Nodes != 0 {
		warn("one replica's %d GPUs do not split evenly over %d nodes", d.GPUs, d.Nodes)
	}
	return d, nil
}

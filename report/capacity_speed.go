package report

import (
	"fmt"
	"math"
	"path/filepath"
)

// answerSpeed plans a trace's traffic on a curve of its own replays: one
// replica replays the trace within the SLO up to the SLO point's speed
// factor S, planned at S × (1 − headroom); the trace as recorded is 1×,
// so the replicas are 1 ÷ that, rounded up. The bursts and the prefix
// reuse of the trace are in the measured replays, not modelled.
func (p *CapacityPlan) answerSpeed(sw Sweep, ask CapacityAsk, warn func(string, ...any)) {
	t := &p.Traffic
	if sw.Trace != nil && sw.Trace.File != "" && filepath.Base(sw.Trace.File) != filepath.Base(ask.Trace) {
		warn("the sweep replayed %s, the plan is for %s: the speeds measured are the first trace's", sw.Trace.File, ask.Trace)
	}
	r := p.Replica
	if r == nil {
		p.answer(ask, warn)
		t.Trace = ask.Trace
		return
	}
	t.Trace = ask.Trace
	first := p.Curve.Points[0]
	rate1 := 0.0
	for _, l := range sw.Levels {
		if l.Schedule != nil && l.Schedule.TraceSpeed == first.Load {
			rate1 = l.Rate / l.Schedule.TraceSpeed // the window's mean rate as recorded
			break
		}
	}
	e := r.MeanE2ELms / 1000
	t.RequestRate, t.Concurrency = rate1, rate1*e
	t.Little = fmt.Sprintf("Little's law: concurrency = rate × E2E = %.4g req/s × %.3g s = %.4g requests in flight (the trace's mean rate as recorded)",
		rate1, e, t.Concurrency)
	need := 1 / r.PlannedLoad
	if math.IsNaN(need) || math.IsInf(need, 0) || need > maxReplicas {
		p.Text = fmt.Sprintf("no answer: one replica's planned speed %.3g× is not a number of replicas this plan can give", r.PlannedLoad)
		return
	}
	p.replicas(fmt.Sprintf("the trace %s as recorded (1×, %.3g req/s on average)", ask.Trace, rate1), need, warn)
	p.Text += fmt.Sprintf(". One replica replays it at up to %.3g× within the SLO (%.3g req/s, %.0f output tok/s), planned at %.3g× (1 ÷ %.3g = %.3g replicas' worth).",
		r.Load, r.RequestRate, r.OutputTokS, r.PlannedLoad, r.PlannedLoad, need)
}

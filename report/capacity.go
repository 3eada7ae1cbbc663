package report

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// DefaultHeadroom is the share of each replica's SLO capacity a plan
// keeps free unless told otherwise.
const DefaultHeadroom = 0.2

// CapacityAsk is the traffic a capacity plan is for, and its terms: a
// request rate, or users who each wait Think between an answer and their
// next request.
type CapacityAsk struct {
	Rate  float64
	Users int
	Think time.Duration
	// SLO is the SLO to plan within ("": the sweep's own).
	SLO string
	// Headroom is the share of each replica's SLO capacity kept free, 0 to
	// below 1.
	Headroom float64
	// TP, PP and Nodes, when set, replace the sweep's recorded deployment.
	TP, PP, Nodes int
	// Trace, when set, is the trace file the traffic is (Rate its busiest
	// minute): a sweep that replayed it at several speeds is planned on
	// the fastest speed meeting the SLO, the trace as recorded being 1×.
	Trace string
}

// Check refuses an ask no plan can answer; the errors name the input.
func (a CapacityAsk) Check() error {
	switch {
	case math.IsNaN(a.Rate) || math.IsInf(a.Rate, 0) || a.Rate < 0:
		return fmt.Errorf("rate: want requests per second above 0, got %g", a.Rate)
	case a.Users < 0:
		return fmt.Errorf("users: must not be negative, got %d", a.Users)
	case a.Rate > 0 && a.Users > 0:
		return errors.New("rate and users both given: the traffic is one or the other")
	case a.Rate == 0 && a.Users == 0:
		return errors.New("no traffic: give a request rate, or users with their think time")
	case a.Think < 0:
		return fmt.Errorf("think time: must not be negative, got %s", a.Think)
	case a.Rate > 0 && a.Think > 0:
		return errors.New("think time goes with users, not with a request rate")
	case math.IsNaN(a.Headroom) || a.Headroom < 0 || a.Headroom >= 1:
		return fmt.Errorf("headroom: want a share from 0 to below 1 (0.2 keeps 20%% free), got %g", a.Headroom)
	case a.TP < 0 || a.PP < 0 || a.Nodes < 0:
		return errors.New("tp, pp and nodes must not be negative")
	case a.TP > maxReplicaGPUs || a.PP > maxReplicaGPUs || a.Nodes > maxReplicaGPUs:
		return fmt.Errorf("tp, pp and nodes: at most %d each", maxReplicaGPUs)
	}
	if a.SLO != "" {
		if _, err := macro.ParseSLOBounds(a.SLO); err != nil {
			return fmt.Errorf("slo: %v", err)
		}
	}
	return nil
}

// CapacityPlan answers how many replicas and GPUs serve the traffic within
// the SLO, with what it read and every estimate said.
type CapacityPlan struct {
	File   string `json:"file"`
	Source string `json:"source"`
	Model  string `json:"model,omitempty"`
	// Traffic is the traffic asked for, and what Little's law made of it.
	Traffic CapacityTraffic `json:"traffic"`
	SLO     CapacitySLO     `json:"slo"`
	// Headroom is the share of each replica's SLO capacity kept free.
	Headroom float64 `json:"headroom"`
	// Curve is the measured levels the answer rests on.
	Curve CapacityCurve `json:"curve"`
	// Replica is what one replica serves within the SLO (nil: no level
	// met it).
	Replica    *CapacityReplica   `json:"replica"`
	Deployment *phases.Deployment `json:"deployment"`
	// Replicas, GPUs and Nodes are the answer (nil: none can be given;
	// Text says why).
	Replicas *int     `json:"replicas"`
	GPUs     *int     `json:"gpus"`
	Nodes    *int     `json:"nodes"`
	Text     string   `json:"text"`
	Warnings []string `json:"warnings"`
}

// CapacityTraffic is the traffic: a rate, or users and their think time
// turned into concurrency with Little's law.
type CapacityTraffic struct {
	Rate   float64 `json:"request_rate,omitempty"`
	Users  int     `json:"users,omitempty"`
	ThinkS float64 `json:"think_time_s,omitempty"`
	// RequestRate is the traffic in requests per second (users: users ÷
	// (E2E + think)); Concurrency the requests in flight it makes (rate ×
	// E2E), with E2E the mean at the replica's SLO point.
	RequestRate float64 `json:"total_request_rate"`
	Concurrency float64 `json:"concurrency"`
	Little      string  `json:"littles_law"`
	// Trace is the trace the traffic is, when it is one.
	Trace string `json:"trace,omitempty"`
}

// CapacitySLO is the SLO planned within and how levels were judged.
type CapacitySLO struct {
	Spec  string  `json:"spec"`
	Share float64 `json:"required_share"`
	// From is "--slo" or "the sweep's"; JudgedBy "goodput" (the sweep's
	// own per-request verdict) or "percentiles" (each figure's percentile
	// at the share, against its bound).
	From     string `json:"from"`
	JudgedBy string `json:"judged_by"`
}

// CapacityCurve is the measured curve: one point per level, by load.
type CapacityCurve struct {
	Unit   string       `json:"unit"` // "concurrency", "request_rate" or "trace_speed"
	Points []CurvePoint `json:"points"`
	// Met is the highest load that met the SLO before the first that did
	// not (Missed); nil when there is none.
	Met    *float64 `json:"met"`
	Missed *float64 `json:"missed"`
	// Interpolated says the SLO point lies between Met and Missed, found
	// by linear interpolation of the judged figure.
	Interpolated bool `json:"interpolated"`
}

// CurvePoint is one level as the plan judged it.
type CurvePoint struct {
	Load              float64 `json:"load"`
	RequestThroughput float64 `json:"request_throughput"`
	OutputThroughput  float64 `json:"output_throughput"`
	MeanE2ELms        float64 `json:"mean_e2el_ms"`
	// Figures are the judged figures (p90_ttft_ms …, good_share,
	// failed_share).
	Figures map[string]float64 `json:"figures"`
	Met     bool               `json:"met"`
	// Excess is how far the level is from the SLO: at most 0 when it met
	// it (the worst figure's ratio to its bound, less 1; for goodput the
	// missing share); nil when it cannot be said (no request completed).
	Excess *float64 `json:"excess"`
	Few    bool     `json:"few_requests,omitempty"`
	Client bool     `json:"client_bound,omitempty"`
	// why says in words the worst figure against its bound; excess is
	// Excess, +Inf when it cannot be said.
	why    string
	excess float64
	// pexcess and pwhy are the same by the percentiles (and failures),
	// which interpolate.
	pwhy    string
	pexcess float64
}

// CapacityReplica is one replica at its SLO point, and as planned.
type CapacityReplica struct {
	// Load is the SLO point: a concurrency, a request rate or a trace's
	// replay speed.
	Load        float64 `json:"load"`
	RequestRate float64 `json:"request_rate"`
	OutputTokS  float64 `json:"output_tok_s"`
	MeanE2ELms  float64 `json:"mean_e2el_ms"`
	// Planned are the SLO point less the headroom.
	PlannedLoad        float64 `json:"planned_load"`
	PlannedRequestRate float64 `json:"planned_request_rate"`
}

// PlanCapacity answers ask from the sweep sw.
func PlanCapacity(sw Sweep, ask CapacityAsk) (*CapacityPlan, error) {
	if err := ask.Check(); err != nil {
		return nil, err
	}
	p := &CapacityPlan{File: sw.Path, Source: sw.Source, Model: sw.Model, Headroom: ask.Headroom, Warnings: []string{}}
	warn := func(format string, args ...any) { p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...)) }
	b, err := p.slo(sw, ask, warn)
	if err != nil {
		return nil, err
	}
	levels, unit := curveLevels(sw.Levels, warn)
	if len(levels) == 0 {
		return nil, fmt.Errorf("%s: no finished level to plan from", sw.Path)
	}
	if err := checkLevels(levels, unit); err != nil {
		return nil, fmt.Errorf("%s: %v", sw.Path, err)
	}
	p.Curve.Unit = unit
	j := newJudge(b, p.SLO.JudgedBy == "goodput", levels, warn)
	for _, l := range levels {
		p.Curve.Points = append(p.Curve.Points, j.point(l, unit))
	}
	p.Curve.Points = mergeRuns(p.Curve.Points, unit, warn)
	if p.Deployment, err = deployment(sw, ask, warn); err != nil {
		return nil, err
	}
	p.replica(warn)
	p.searchNote(sw.Search, warn)
	if ask.Trace != "" && unit == unitSpeed {
		p.answerSpeed(sw, ask, warn)
		return p, nil
	}
	if ask.Trace != "" {
		warn("the sweep's levels are not replays of a trace: the plan sets the trace's busiest minute against them as a rate "+
			"(profdeck sweep --dataset FORMAT %s --search speed --slo SPEC replays the trace itself at several speeds)", ask.Trace)
	}
	p.answer(ask, warn)
	return p, nil
}

// slo settles the SLO planned within and how levels are judged.
func (p *CapacityPlan) slo(sw Sweep, ask CapacityAsk, warn func(string, ...any)) (macro.SLOBounds, error) {
	spec, from := ask.SLO, "--slo"
	if spec == "" {
		spec, from = sw.SLO, "the sweep's"
	}
	if spec == "" {
		return macro.SLOBounds{}, fmt.Errorf("%s: the sweep had no SLO: give one (e.g. --slo ttft=2s,tpot=50ms)", sw.Path)
	}
	b, err := macro.ParseSLOBounds(spec)
	if err != nil {
		return b, fmt.Errorf("%s: the sweep's SLO %q: %v", sw.Path, spec, err)
	}
	if from == "the sweep's" && sw.SLOShare > 0 {
		b.Share = sw.SLOShare
	}
	p.SLO = CapacitySLO{Spec: b.Spec, Share: b.Share, From: from, JudgedBy: "percentiles"}
	// The sweep's own verdict counts each request against every bound at
	// once: the exact answer, when the SLO is the sweep's.
	same := sw.SLO != "" && sw.SLOShare > 0 && sameSLO(sw.SLO, b.Spec) && sw.SLOShare == b.Share
	if (from == "the sweep's" || same) && hasGoodput(sw.Levels) {
		p.SLO.JudgedBy = "goodput"
	} else {
		warn("judged on each figure's p%g against its bound, figure by figure: a request must meet every bound at once to count, "+
			"so when different requests miss different bounds the sweep's goodput can be lower (run the sweep with --slo %s for the exact share)",
			100*b.Share, b.Spec)
	}
	return b, nil
}

// sameSLO reports whether two SLO specs have the same bounds.
func sameSLO(a, b string) bool {
	x, err1 := macro.ParseSLOBounds(a)
	y, err2 := macro.ParseSLOBounds(b)
	return err1 == nil && err2 == nil && x.Spec == y.Spec
}

func hasGoodput(levels []phases.LevelResult) bool {
	for _, l := range levels {
		if l.Goodput == nil {
			return false
		}
	}
	return len(levels) > 0
}

// curveLevels are the levels the plan reads, by load: the closed-loop
// levels (or, without any, the open-loop ones), a level run twice kept at
// its worse run.
func curveLevels(all []phases.LevelResult, warn func(string, ...any)) ([]phases.LevelResult, string) {
	var closed, open []phases.LevelResult
	speeds := 0
	for _, l := range all {
		switch {
		case l.Rate > 0:
			open = append(open, l)
			if l.Schedule != nil && l.Schedule.TraceSpeed > 0 {
				speeds++
			}
		case l.Concurrency > 0:
			closed = append(closed, l)
		}
	}
	levels, unit := closed, "concurrency"
	if len(closed) == 0 {
		levels, unit = open, "request_rate"
		if speeds > 0 && speeds == len(open) {
			unit = unitSpeed
		}
	} else if len(open) > 0 {
		warn("the sweep has closed-loop and open-loop levels: the plan reads the %d closed-loop ones", len(closed))
	}
	sort.SliceStable(levels, func(i, k int) bool { return loadOf(levels[i], unit) < loadOf(levels[k], unit) })
	return levels, unit
}

// unitSpeed is a curve of a trace's replays, by speed factor.
const unitSpeed = "trace_speed"

func loadOf(l phases.LevelResult, unit string) float64 {
	switch unit {
	case "request_rate":
		return l.Rate
	case unitSpeed:
		return l.Schedule.TraceSpeed
	}
	return float64(l.Concurrency)
}

// loadName is a load as the text says it: C=16, 3.2 req/s, or 4× (a
// trace's replay speed).
func loadName(x float64, unit string) string {
	switch unit {
	case "request_rate":
		return fmt.Sprintf("%.3g req/s", x)
	case unitSpeed:
		return fmt.Sprintf("%.3g×", x)
	}
	if x == math.Trunc(x) {
		return fmt.Sprintf("C=%.0f", x)
	}
	return fmt.Sprintf("C≈%.1f", x)
}

// join lists items as "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// mergeRuns makes one point of the runs of one load (a level repeated,
// or run again by a search): it met the SLO only if every run did, its
// figures are the worst run's and its throughputs the runs' mean.
func mergeRuns(pts []CurvePoint, unit string, warn func(string, ...any)) []CurvePoint {
	var out []CurvePoint
	for i := 0; i < len(pts); {
		k := i + 1
		for k < len(pts) && pts[k].Load == pts[i].Load {
			k++
		}
		if k == i+1 {
			out = append(out, pts[i])
			i = k
			continue
		}
		m, met := pts[i], 0
		var rt, ot, e2e float64
		for _, pt := range pts[i:k] {
			if pt.excess > m.excess {
				m.excess, m.why, m.Figures, m.Excess = pt.excess, pt.why, pt.Figures, pt.Excess
			}
			if pt.pexcess > m.pexcess {
				m.pexcess, m.pwhy = pt.pexcess, pt.pwhy
			}
			if pt.Met {
				met++
			}
			m.Few, m.Client = m.Few || pt.Few, m.Client || pt.Client
			rt, ot, e2e = rt+pt.RequestThroughput, ot+pt.OutputThroughput, e2e+pt.MeanE2ELms
		}
		n := float64(k - i)
		m.RequestThroughput, m.OutputThroughput, m.MeanE2ELms = rt/n, ot/n, e2e/n
		m.Met = met == k-i
		if met > 0 && !m.Met {
			warn("%s ran %d times and met the SLO in %d: counted as missed (its worst run), throughput the runs' mean", loadName(m.Load, unit), k-i, met)
		}
		out = append(out, m)
		i = k
	}
	return out
}

// searchNote says what the sweep's own SLO search found, when it searched
// for the SLO the plan uses, beside the plan's point.
func (p *CapacityPlan) searchNote(s *phases.Search, warn func(string, ...any)) {
	if s == nil || !s.Done || !sameSLO(s.SLO, p.SLO.Spec) || s.RequiredShare != p.SLO.Share {
		return
	}
	unit := p.Curve.Unit
	interval := fmt.Sprintf("from %s", loadName(s.Lower, unit))
	if s.Upper != nil {
		interval = fmt.Sprintf("between %s (met) and %s (missed)", loadName(s.Lower, unit), loadName(*s.Upper, unit))
	}
	msg := fmt.Sprintf("the sweep's SLO search put the limit %s in %d runs (stopped: %s)", interval, s.Runs, s.StoppedBecause)
	if r := p.Replica; r != nil && s.Upper != nil && (r.Load < s.Lower || r.Load > *s.Upper) {
		msg += fmt.Sprintf("; the plan's SLO point %s lies outside it", loadName(r.Load, unit))
	}
	warn("%s", msg)
}

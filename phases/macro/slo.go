package macro

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// SLOShare is the share of a level's requests that must meet the SLO for
// the level to meet it, unless the SLO says otherwise (share=0.99).
const SLOShare = 0.90

// slo is a parsed --slo: a bound per figure (0: none), as vLLM's
// --goodput: a request is good when it succeeded and each of its figures
// is within its bound.
type slo struct {
	ttft, tpot, e2el time.Duration
	share            float64
}

// Bounds of an SLO's latency bound: under a microsecond no request can
// meet it (and the bound would round to none), over a day it bounds
// nothing a sweep measures.
const (
	minSLOBound = time.Microsecond
	maxSLOBound = 24 * time.Hour
)

// ParseSLO reads "ttft=2s,tpot=50ms,e2el=30s" (a bare number is
// milliseconds, as vLLM's --goodput takes them; ":" works for "=", and
// share=0.95 sets the share a level needs). Each key at most once; each
// bound from 1µs to 24h. The errors name the item at fault, not the flag
// or key: the caller adds that.
func ParseSLO(spec string) (*slo, error) {
	s := &slo{share: SLOShare}
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v, ok = strings.Cut(f, ":")
		}
		if !ok {
			return nil, fmt.Errorf("%.60q is not KEY=VALUE (keys ttft, tpot, e2el, share)", f)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if seen[k] {
			return nil, fmt.Errorf("%.20s is given twice", k)
		}
		seen[k] = true
		if err := s.set(k, v); err != nil {
			return nil, err
		}
	}
	if s.ttft == 0 && s.tpot == 0 && s.e2el == 0 {
		return nil, fmt.Errorf("no bound in %.60q (e.g. ttft=2s,tpot=50ms,e2el=30s)", spec)
	}
	return s, nil
}

// set sets the SLO's key k from its value v.
func (s *slo) set(k, v string) error {
	if k == "share" {
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if strings.HasSuffix(v, "%") {
			x /= 100
		}
		if err != nil || math.IsNaN(x) || x <= 0 || x > 1 {
			return fmt.Errorf("share=%.40q: want a fraction in (0,1] or a percentage", v)
		}
		s.share = x
		return nil
	}
	var dst *time.Duration
	switch k {
	case "ttft":
		dst = &s.ttft
	case "tpot":
		dst = &s.tpot
	case "e2el":
		dst = &s.e2el
	default:
		return fmt.Errorf("unknown key %.40q (keys ttft, tpot, e2el, share)", k)
	}
	d, err := sloDuration(v)
	if err != nil {
		return fmt.Errorf("%s=%.40q: %v", k, v, err)
	}
	*dst = d
	return nil
}

// sloDuration reads one bound: a Go duration, or a bare number of
// milliseconds; finite, from minSLOBound to maxSLOBound.
func sloDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	want := fmt.Errorf("want a duration from %s to %s, such as 2s or 50ms (a bare number is milliseconds)", minSLOBound, maxSLOBound)
	var d time.Duration
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		ms := float64(time.Millisecond)
		if math.IsNaN(x) || x*ms < float64(minSLOBound) || x*ms > float64(maxSLOBound) {
			return 0, want
		}
		d = time.Duration(x * ms)
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, want
	}
	if d < minSLOBound || d > maxSLOBound {
		return 0, want
	}
	return d, nil
}

// String is the SLO as the result records it.
func (s *slo) String() string {
	var p []string
	for _, b := range []struct {
		k string
		d time.Duration
	}{{"ttft", s.ttft}, {"tpot", s.tpot}, {"e2el", s.e2el}} {
		if b.d > 0 {
			p = append(p, b.k+"="+b.d.String())
		}
	}
	return strings.Join(p, ",")
}

// good reports whether a completed request met every bound.
func (s *slo) good(r *Record) bool {
	return (s.ttft == 0 || r.ttft <= s.ttft) && (s.e2el == 0 || r.e2el <= s.e2el) &&
		(s.tpot == 0 || r.OutputTokens <= 1 || r.tpot <= s.tpot)
}

// sloCount counts a level's good requests and their output tokens.
type sloCount struct {
	good    int
	goodTok int64
}

// goodput sets the level's goodput from its counts: the share of
// completed requests that met the SLO, and the level's throughputs scaled
// by it (requests) and by the good requests' tokens (tokens).
func (s *slo) goodput(lr *phases.LevelResult, c sloCount) {
	g := &phases.Goodput{Good: c.good}
	if n := lr.Completed + lr.Failed; n > 0 {
		// A failed request is never good: the share is over all requests.
		g.Share = float64(c.good) / float64(n)
	}
	if lr.Completed > 0 {
		g.RequestGoodput = lr.RequestThroughput * float64(c.good) / float64(lr.Completed)
	}
	if lr.TotalOutputTokens > 0 {
		g.TokenGoodput = lr.OutputThroughput * float64(c.goodTok) / float64(lr.TotalOutputTokens)
	}
	g.Met = lr.Completed+lr.Failed > 0 && g.Share >= s.share
	lr.Goodput = g
}

// SLOResult is the sweep's SLO: its bounds and the largest concurrency,
// request rate or trace replay speed whose level met it.
type SLOResult struct {
	Spec  string  `json:"spec"`
	Share float64 `json:"required_share"`
	// MaxConcurrency is the largest C whose level met the SLO (0: none).
	MaxConcurrency int `json:"max_concurrency"`
	// MaxRate and MaxSpeed are, for open-loop levels, the largest request
	// rate and, for a trace's replays, the largest speed that met it.
	MaxRate  float64 `json:"max_rate,omitempty"`
	MaxSpeed float64 `json:"max_speed,omitempty"`
	Text     string  `json:"text"`
}

// sloSummary finds the largest concurrency, rate or replay speed meeting
// the SLO.
func (s *slo) summary(levels []phases.LevelResult) *SLOResult {
	out := &SLOResult{Spec: s.String(), Share: s.share}
	for _, l := range levels {
		if l.Goodput == nil || !l.Goodput.Met {
			continue
		}
		switch {
		case l.Schedule != nil && l.Schedule.TraceSpeed > 0:
			out.MaxSpeed = max(out.MaxSpeed, l.Schedule.TraceSpeed)
		case l.Rate > 0:
			out.MaxRate = max(out.MaxRate, l.Rate)
		default:
			out.MaxConcurrency = max(out.MaxConcurrency, l.Concurrency)
		}
	}
	of := fmt.Sprintf("(%s for %.0f%% of requests)", out.Spec, 100*s.share)
	switch {
	case out.MaxSpeed > 0:
		out.Text = fmt.Sprintf("largest replay speed meeting the SLO %s: %.3g×", of, out.MaxSpeed)
	case out.MaxRate > 0:
		out.Text = fmt.Sprintf("largest rate meeting the SLO %s: %.4g req/s", of, out.MaxRate)
	case out.MaxConcurrency > 0:
		out.Text = fmt.Sprintf("largest C meeting the SLO %s: %d", of, out.MaxConcurrency)
	default:
		out.Text = "no level met the SLO " + of
	}
	return out
}

// sloEnd names the largest concurrency meeting the SLO beside the plateau.
func (r *runner) sloEnd(ctx context.Context, res *Result) {
	if r.cfg.slo == nil {
		return
	}
	res.SLO = r.cfg.slo.summary(res.Levels)
	if sr := res.Search; sr != nil {
		res.SLO.Text = sr.Text
		if sr.Mode == phases.SearchConcurrency {
			res.SLO.MaxConcurrency = int(sr.Answer)
		}
	}
	r.em.Emit(ctx, phases.KindMacroSLO, &phases.SLOMet{Spec: res.SLO.Spec, MaxConcurrency: res.SLO.MaxConcurrency,
		MaxRate: res.SLO.MaxRate, MaxSpeed: res.SLO.MaxSpeed, Text: res.SLO.Text})
	if res.Plateau != nil {
		res.Plateau.SLO = res.SLO.Text
	}
}

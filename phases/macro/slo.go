package macro

import (
	"context"
	"fmt"
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

// ParseSLO reads "ttft=2s,tpot=50ms,e2el=30s" (a bare number is
// milliseconds, as vLLM's --goodput takes them; ":" works for "=", and
// share=0.95 sets the share a level needs).
func ParseSLO(spec string) (*slo, error) {
	s := &slo{share: SLOShare}
	any := false
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v, ok = strings.Cut(f, ":")
		}
		if !ok {
			return nil, fmt.Errorf("--slo %q: %q is not KEY=VALUE (keys ttft, tpot, e2el, share)", spec, f)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "share" {
			x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if strings.HasSuffix(v, "%") {
				x /= 100
			}
			if err != nil || x <= 0 || x > 1 {
				return nil, fmt.Errorf("--slo %q: share %q must be a fraction in (0,1] or a percentage", spec, v)
			}
			s.share = x
			continue
		}
		d, err := sloDuration(v)
		if err != nil {
			return nil, fmt.Errorf("--slo %q: %s=%q: %v", spec, k, v, err)
		}
		switch k {
		case "ttft":
			s.ttft = d
		case "tpot":
			s.tpot = d
		case "e2el":
			s.e2el = d
		default:
			return nil, fmt.Errorf("--slo %q: unknown key %q (keys ttft, tpot, e2el, share)", spec, k)
		}
		any = true
	}
	if !any {
		return nil, fmt.Errorf("--slo %q: no bound (e.g. ttft=2s,tpot=50ms,e2el=30s)", spec)
	}
	return s, nil
}

func sloDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if x <= 0 {
			return 0, fmt.Errorf("must be positive")
		}
		return time.Duration(x * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 2s or 50ms")
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

// SLOResult is the sweep's SLO: its bounds and the largest concurrency
// whose level met it.
type SLOResult struct {
	Spec  string  `json:"spec"`
	Share float64 `json:"required_share"`
	// MaxConcurrency is the largest C whose level met the SLO (0: none).
	MaxConcurrency int    `json:"max_concurrency"`
	Text           string `json:"text"`
}

// sloSummary finds the largest concurrency meeting the SLO.
func (s *slo) summary(levels []phases.LevelResult) *SLOResult {
	out := &SLOResult{Spec: s.String(), Share: s.share}
	for _, l := range levels {
		if l.Goodput != nil && l.Goodput.Met && l.Rate == 0 && l.Concurrency > out.MaxConcurrency {
			out.MaxConcurrency = l.Concurrency
		}
	}
	if out.MaxConcurrency == 0 {
		out.Text = fmt.Sprintf("no level met the SLO (%s for %.0f%% of requests)", out.Spec, 100*s.share)
	} else {
		out.Text = fmt.Sprintf("largest C meeting the SLO (%s for %.0f%% of requests): %d", out.Spec, 100*s.share, out.MaxConcurrency)
	}
	return out
}

// sloEnd names the largest concurrency meeting the SLO beside the plateau.
func (r *runner) sloEnd(ctx context.Context, res *Result) {
	if r.cfg.slo == nil {
		return
	}
	res.SLO = r.cfg.slo.summary(res.Levels)
	r.em.Emit(ctx, phases.KindMacroSLO, &phases.SLOMet{Spec: res.SLO.Spec, MaxConcurrency: res.SLO.MaxConcurrency, Text: res.SLO.Text})
	if res.Plateau != nil {
		res.Plateau.SLO = res.SLO.Text
	}
}

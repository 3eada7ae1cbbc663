package macro

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// The SLO search (--search concurrency|rate): climb the ladder (the
// concurrency levels, or rates doubling from --rate) until a level misses
// the SLO, then bisect between the last level that met it and the first
// that missed until they are within the tolerance. A level's verdict is the
// share of its requests that met the SLO against the share required; when
// the share's 95% interval holds the required share, the level is run again
// (up to searchMaxRuns runs, counted together) before it is judged. A level
// that is over-saturated misses, whatever its share.

// searchRungs bounds the rate ladder: R, 2R, … 2^(searchRungs−1)·R.
const searchRungs = 16

// searchMaxRuns is the most runs of a level whose verdict is inside its noise.
const searchMaxRuns = 3

// rateFloor bounds the downward bisection when the rate ladder's first
// rung misses: it ends below first/rateFloor.
const rateFloor = 16

// CheckSearchMode checks a search mode: none, concurrency or rate.
func CheckSearchMode(mode string) error {
	switch mode {
	case "", phases.SearchConcurrency, phases.SearchRate, phases.SearchSpeed:
		return nil
	}
	return fmt.Errorf("%q: want concurrency, rate or speed (a trace's replay)", mode)
}

// CheckSearchTolerance checks the search's tolerance: 0 (not given: the
// caller says whether that is allowed) or a share above 0 and under 1.
func CheckSearchTolerance(t float64) error {
	if t != 0 && (units.CheckFloat(t, 0, 1) != nil || t <= 0 || t >= 1) {
		return fmt.Errorf("%g: want more than 0 and under 1 (e.g. 0.05)", t)
	}
	return nil
}

// ErrSearchNeedsSLO is a search without an SLO to meet.
var ErrSearchNeedsSLO = errors.New("a search needs an SLO to meet (e.g. --slo tpot=50ms)")

// CheckSearch checks the search's settings; each error names its field.
func CheckSearch(mode string, tol float64, slo string) error {
	if err := CheckSearchMode(mode); err != nil {
		return fmt.Errorf("Search %v", err)
	}
	if err := CheckSearchTolerance(tol); err != nil {
		return fmt.Errorf("SearchTolerance %v", err)
	}
	if mode != "" && strings.TrimSpace(slo) == "" {
		return fmt.Errorf("Search %s: %w", mode, ErrSearchNeedsSLO)
	}
	return nil
}

// searcher is one search's state.
type searcher struct {
	r   *runner
	res *Result
	s   *phases.Search
}

// search runs the SLO search and sets res.Search; the error is ctx's when
// the sweep was cancelled.
func (r *runner) search(ctx context.Context, res *Result) error {
	cfg := r.cfg
	s := &phases.Search{Mode: cfg.Search, Unit: "concurrency", SLO: cfg.slo.String(), RequiredShare: cfg.slo.share,
		Tolerance: cfg.SearchTolerance, Steps: []phases.SearchStep{}}
	switch cfg.Search {
	case phases.SearchRate:
		s.Unit = "req/s"
	case phases.SearchSpeed:
		s.Unit = "speed"
	}
	res.Search = s
	se := &searcher{r: r, res: res, s: s}
	if n := cfg.Requests; n > 0 && cfg.Duration == 0 {
		if lo, _ := wilson(n, n); lo < s.RequiredShare {
			w := fmt.Sprintf("%d requests per level cannot tell a level where all meet the SLO from one at %.0f%% (the 95%% interval of %d of %d reaches %.0f%%): "+
				"each level may run %d times; give --requests %d or more", n, 100*s.RequiredShare, n, n, 100*lo, searchMaxRuns, minSettled(s.RequiredShare))
			r.warns.sweep = append(r.warns.sweep, w)
			r.em.Emit(ctx, phases.KindMacroWarning, &phases.MacroWarning{Text: w})
		}
	}
	defer func() { s.Done = true; se.emit(ctx) }()
	hi, err := se.climb(ctx)
	if err != nil || s.StoppedBecause == phases.StopOperator {
		return err
	}
	for hi > 0 && !se.closeEnough(s.Lower, hi) {
		mid := se.mid(s.Lower, hi)
		st, err := se.probe(ctx, mid, "bisect")
		if err != nil {
			return err
		}
		if st.Met {
			s.Lower = mid
		} else {
			hi = mid
		}
		se.bounds(hi)
		se.emit(ctx)
		if r.stopping() {
			res.Notes = append(res.Notes, "the search was stopped by the operator before its bounds met the tolerance")
			break
		}
	}
	return nil
}

// climb runs the ladder until a level misses; it returns the first level
// that missed (0: none did).
func (se *searcher) climb(ctx context.Context) (float64, error) {
	s := se.s
	for i, v := range se.ladder() {
		st, err := se.probe(ctx, v, "ladder")
		if err != nil {
			s.StoppedBecause = phases.StopCancelled
			return 0, err
		}
		if s.Mode == phases.SearchConcurrency && i > 0 {
			se.r.plateauCheck(ctx, se.res, false)
		}
		if !st.Met {
			s.StoppedBecause = st.Why
			se.bounds(v)
			se.emit(ctx)
			return v, nil
		}
		s.Lower = v
		se.bounds(0)
		se.emit(ctx)
		if se.r.stopping() {
			s.StoppedBecause = phases.StopOperator
			return 0, nil
		}
	}
	s.StoppedBecause = phases.StopLadderTop
	return 0, nil
}

// bounds records the search's interval (hi 0: none missed yet).
func (se *searcher) bounds(hi float64) {
	s := se.s
	s.Answer = s.Lower
	s.Upper = nil
	if hi > 0 {
		s.Upper = &hi
	}
}

// emit sends the search as it stands.
func (se *searcher) emit(ctx context.Context) {
	s := se.s
	s.Text = searchText(s)
	c := *s
	c.Steps = append([]phases.SearchStep(nil), s.Steps...)
	if s.Upper != nil {
		u := *s.Upper
		c.Upper = &u
	}
	se.r.em.Emit(ctx, phases.KindMacroSearch, &c)
}

// ladder is the climb's levels: the concurrency levels, or rates doubling
// from SearchFrom up to MaxRate.
func (se *searcher) ladder() []float64 {
	cfg := se.r.cfg
	var out []float64
	if se.s.Mode == phases.SearchSpeed {
		return cfg.trace.speedLadder(searchRungs)
	}
	if se.s.Mode == phases.SearchRate {
		r := cfg.SearchFrom
		for i := 0; i < searchRungs && r <= MaxRate; i++ {
			out = append(out, r)
			r *= 2
		}
		return out
	}
	for _, c := range cfg.Concurrency {
		out = append(out, float64(c))
	}
	return out
}

// closeEnough reports whether the bisection is over.
func (se *searcher) closeEnough(lo, hi float64) bool {
	tol := se.s.Tolerance
	if se.s.Mode == phases.SearchConcurrency {
		return hi-lo <= math.Max(1, math.Floor(tol*lo))
	}
	if lo == 0 {
		return hi <= se.ladder()[0]/rateFloor
	}
	return hi-lo <= tol*lo
}

// mid is the next level to try between lo (met) and hi (missed).
func (se *searcher) mid(lo, hi float64) float64 {
	if se.s.Mode == phases.SearchConcurrency {
		return math.Floor((lo + hi) / 2)
	}
	if lo == 0 {
		return round4(hi / 2)
	}
	return round4((lo + hi) / 2)
}

// round4 rounds to four significant digits.
func round4(x float64) float64 {
	if x <= 0 {
		return x
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(x)))
	return math.Round(x*p) / p
}

// probe runs one level of the search, again while its verdict is inside
// its noise, records it as a level and a step, and returns the step.
func (se *searcher) probe(ctx context.Context, v float64, phase string) (phases.SearchStep, error) {
	r := se.r
	conc, rate := int(v), 0.0
	switch se.s.Mode {
	case phases.SearchRate:
		conc, rate = 0, v
	case phases.SearchSpeed:
		conc, rate, r.speed = 0, r.cfg.trace.rateAt(v), v
	}
	minRuns := max(r.cfg.Repeat, 1)
	maxRuns := max(minRuns, searchMaxRuns)
	var runs []*phases.LevelResult
	var err error
	var noisy []string
	defer func() { r.run, r.runs, r.speed = 0, 0, 0 }()
	for k := 0; k < maxRuns; k++ {
		if k > 0 || minRuns > 1 {
			r.run, r.runs = k+1, minRuns
			if k >= minRuns {
				r.runs = maxRuns
			}
		}
		lr, e := r.runLevel(ctx, conc, rate)
		if lr != nil {
			runs = append(runs, lr)
		}
		if err = e; err != nil || k+1 < minRuns {
			if err != nil {
				break
			}
			continue
		}
		st := se.verdict(combineRuns(runs), v, phase, len(runs))
		if !st.Uncertain || r.stopping() || k+1 == maxRuns {
			break
		}
		noisy = append(noisy, fmt.Sprintf("after %d run(s) %.0f%% of requests met the SLO (95%% interval %.0f–%.0f%%, %.0f%% required): run again",
			len(runs), 100*st.Share, 100*st.ShareLow, 100*st.ShareHigh, 100*se.s.RequiredShare))
	}
	lr := combineRuns(runs)
	if lr == nil {
		return phases.SearchStep{Value: v, Phase: phase, Why: phases.StopSLO}, err
	}
	lr.Notes = append(lr.Notes, noisy...)
	st := se.verdict(lr, v, phase, len(runs))
	if st.Uncertain {
		lr.Notes = append(lr.Notes, fmt.Sprintf("the SLO verdict is still inside its noise after %d runs: judged on the share measured", len(runs)))
	}
	r.levelDone(ctx, se.res, lr)
	if st.Met && rate > 0 {
		r.openSpan = time.Duration(3 * lr.MedianE2ELms * float64(time.Millisecond))
	}
	se.s.Runs += len(runs)
	se.s.Steps = append(se.s.Steps, st)
	if st.ClientBound {
		r.warns.sweep = appendOnce(r.warns.sweep, "the search's verdicts at levels this client limited are the client's, not the server's (see client_bound)")
	}
	return st, err
}

// verdict judges a level against the SLO.
func (se *searcher) verdict(lr *phases.LevelResult, v float64, phase string, runs int) phases.SearchStep {
	req := se.s.RequiredShare
	st := phases.SearchStep{Value: v, Phase: phase, Runs: runs, ClientBound: lr.ClientBound}
	n := lr.Completed + lr.Failed
	good := 0
	if lr.Goodput != nil {
		good = lr.Goodput.Good
	}
	if n > 0 {
		st.Share = float64(good) / float64(n)
		st.ShareLow, st.ShareHigh = wilson(good, n)
	}
	st.Met = n > 0 && st.Share >= req && !lr.OverSaturated
	switch {
	case st.Met:
	case lr.OverSaturated:
		st.Why = phases.StopSaturation
	case n > 0 && float64(lr.Failed) > (1-req)*float64(n):
		st.Why = phases.StopFailures
	default:
		st.Why = phases.StopSLO
	}
	st.Uncertain = !lr.OverSaturated && n > 0 && st.ShareLow < req && req <= st.ShareHigh
	return st
}

// minSettled is the fewest requests whose all meeting the SLO settles a
// level's verdict against the required share.
func minSettled(share float64) int {
	n := 1
	for ; n < 100000; n++ {
		if lo, _ := wilson(n, n); lo >= share {
			break
		}
	}
	return n
}

// wilson is the 95% Wilson score interval of good successes in n.
func wilson(good, n int) (lo, hi float64) {
	const z = 1.96
	p, fn := float64(good)/float64(n), float64(n)
	d := 1 + z*z/fn
	c := (p + z*z/(2*fn)) / d
	h := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / d
	return math.Max(0, c-h), math.Min(1, c+h)
}

// searchText is the search's answer in one line.
func searchText(s *phases.Search) string {
	slo := fmt.Sprintf("%s for %.0f%% of requests", s.SLO, 100*s.RequiredShare)
	what := "C"
	switch s.Mode {
	case phases.SearchRate:
		what = "rate"
	case phases.SearchSpeed:
		what = "speed"
	}
	var head string
	switch {
	case s.Answer == 0 && s.Upper != nil:
		head = fmt.Sprintf("no %s met the SLO (%s): the limit is under %s", what, slo, s.ValueText(*s.Upper))
	case s.Answer == 0:
		head = fmt.Sprintf("no %s met the SLO (%s) yet", what, slo)
	default:
		head = fmt.Sprintf("largest %s meeting the SLO (%s): %s, the limit in %s", what, slo, s.ValueText(s.Answer), s.Interval())
	}
	head += fmt.Sprintf(" — %d run(s)", s.Runs)
	if why := stopWords[s.StoppedBecause]; why != "" && len(s.Steps) > 0 {
		head += "; the climb stopped: " + why
	}
	return head
}

// stopWords says why the climb stopped.
var stopWords = map[string]string{
	phases.StopSLO:        "a level missed the SLO",
	phases.StopFailures:   "a level's failed requests alone kept it from the SLO",
	phases.StopSaturation: "a level was over-saturated (TTFT and the queue grew with time)",
	phases.StopLadderTop:  "the ladder's top met the SLO (the limit is above it)",
	phases.StopOperator:   "stopped by the operator",
	phases.StopCancelled:  "cancelled",
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

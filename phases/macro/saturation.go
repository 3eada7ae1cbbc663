package macro

import (
	"fmt"
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Over-saturation: a server that does not keep up with an open loop's
// arrivals queues them, so inside one level both the requests in flight
// and the TTFT grow with time, and the level's figures depend on how long
// it ran. Each is fitted against time by least squares; the level is
// over-saturated when, for both, even the lower end of the slope's 95%
// confidence interval grows the figure over the level by more than
// satMargin of its mean (and the queue by at least one request).

// satMargin is the growth over the level, as a share of the figure's mean,
// that the slope's lower bound must reach.
const satMargin = 0.25

// satMinSamples is the fewest points each fit needs.
const satMinSamples = 20

// fit is a running least-squares fit of y against x (Welford's updates:
// constant memory, stable sums).
type fit struct {
	n             float64
	mx, my        float64
	cxx, cxy, cyy float64
	minX, maxX    float64
	haveX         bool
}

func (f *fit) add(x, y float64) {
	f.n++
	dx := x - f.mx
	f.mx += dx / f.n
	dy := y - f.my
	f.my += dy / f.n
	f.cxx += dx * (x - f.mx)
	f.cxy += dx * (y - f.my)
	f.cyy += dy * (y - f.my)
	if !f.haveX {
		f.minX, f.maxX, f.haveX = x, x, true
	}
	f.minX, f.maxX = math.Min(f.minX, x), math.Max(f.maxX, x)
}

// slope is the fitted slope and its 95% confidence interval's half-width.
func (f *fit) slope() (b, half float64, ok bool) {
	if f.n < 3 || f.cxx <= 0 {
		return 0, 0, false
	}
	b = f.cxy / f.cxx
	resid := math.Max(0, (f.cyy-b*f.cxy)/(f.n-2))
	t := 1.96
	if df := int(f.n) - 2; df <= len(tTable) {
		t = tTable[df-1]
	}
	return b, t * math.Sqrt(resid/f.cxx), true
}

// growth is the lower bound of the figure's growth over the fit's span.
func (f *fit) growth() (low, slope, half float64, ok bool) {
	b, h, ok := f.slope()
	if !ok {
		return 0, 0, 0, false
	}
	return (b - h) * (f.maxX - f.minX), b, h, true
}

// saturation fits a level's TTFT and requests in flight against time.
type saturation struct {
	ttft, queue fit
}

// check says why the level is over-saturated, or "".
func (s *saturation) check() string {
	if s.ttft.n < satMinSamples || s.queue.n < satMinSamples {
		return ""
	}
	gt, bt, ht, ok1 := s.ttft.growth()
	gq, bq, hq, ok2 := s.queue.growth()
	if !ok1 || !ok2 || gt <= satMargin*s.ttft.my || gq <= math.Max(1, satMargin*s.queue.my) {
		return ""
	}
	return fmt.Sprintf("over-saturated: over %.0fs, TTFT grew %.0f ± %.0f ms/s and the requests in flight %.2f ± %.2f per second (95%% CIs): the server did not keep up",
		s.queue.maxX-s.queue.minX, bt, ht, bq, hq)
}

// observe takes one measured request's send against its schedule, and its
// TTFT into the saturation fit once a measured request has completed (the
// level's ramp from nothing in flight is not growth).
func (l *level) observe(rec *Record, now time.Time) {
	if l.rate > 0 {
		l.sched.add(rec.ScheduledS, rec.SentS)
	}
	if !rec.Completed() {
		return
	}
	if l.satFrom.IsZero() {
		l.satFrom = now
		return
	}
	sent := l.r.t0.Add(time.Duration(rec.SentS * float64(time.Second)))
	if !sent.Before(l.satFrom) {
		l.sat.ttft.add(sent.Sub(l.start).Seconds(), ms(rec.ttft))
	}
}

// stopIfSaturated ends a searched open-loop level's sending once it is
// over-saturated: running it longer only grows the queue.
func (l *level) stopIfSaturated() {
	if l.cfg.Search == "" || l.rate == 0 || l.sendingOver {
		return
	}
	if why := l.sat.check(); why != "" {
		l.satWhy, l.sendingOver = why, true
		l.notes = append(l.notes, fmt.Sprintf("sending stopped at %.1fs: %s", time.Since(l.start).Seconds(), why))
	}
}

// loadWarnings sets the level's over-saturation and open-loop schedule and
// says what they found.
func (l *level) loadWarnings(lr *phases.LevelResult) []warning {
	var w []warning
	why := l.satWhy
	if why == "" {
		why = l.sat.check()
	}
	if why != "" {
		lr.OverSaturated, lr.Saturation = true, why
		w = append(w, warning{warnSaturated, why})
	}
	if l.rate > 0 {
		if x := l.openLoopResult(lr); x != nil {
			w = append(w, *x)
		}
	}
	return w
}

// openLoopSpan raises a searched open-loop level's request count so that
// it sends for at least r.openSpan: a queue that grows shows only after
// the first requests have ended. It returns the level's note, or "".
func (r *runner) openLoopSpan(cfg *Config, rate float64) string {
	if rate <= 0 || r.openSpan <= 0 || cfg.Requests <= 0 || cfg.trace != nil { // a trace's window is what it replays
		return ""
	}
	need := int(math.Ceil(rate * r.openSpan.Seconds()))
	if need <= cfg.Requests {
		return ""
	}
	from := cfg.Requests
	cfg.Requests = need
	return fmt.Sprintf("measured requests raised from %d to %d so that the level sends for %.1fs, three times the last level meeting the SLO's median E2EL: "+
		"a queue that grows shows only after the first requests have ended", from, need, r.openSpan.Seconds())
}

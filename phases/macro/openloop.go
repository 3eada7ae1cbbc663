package macro

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// This file is the open loop's schedule: when each request is meant to
// leave (Poisson, gamma with a burstiness, or constant), what was sent
// against it, and the coordinated-omission correction.

// Arrival processes (Config.Arrivals) and latency origins (Config.LatencyFrom).
const (
	ArrivalsPoisson  = "poisson"
	ArrivalsConstant = "constant"
	LatencySent      = "sent"
	LatencyIntended  = "intended"
)

// MaxBurstiness bounds --burstiness (the gamma shape): past it the gaps
// are as good as constant.
const MaxBurstiness = 1000

// fellBehindShare is the share of the scheduled rate under which the
// client is said to have fallen behind.
const fellBehindShare = 0.95

// CheckArrivals checks an arrival process: poisson or constant.
func CheckArrivals(arrivals string) error {
	switch arrivals {
	case "", ArrivalsPoisson, ArrivalsConstant:
		return nil
	}
	return fmt.Errorf("%q: want poisson or constant", arrivals)
}

// CheckBurstiness checks a burstiness (0: not given; the caller says
// whether that is allowed) for its arrivals.
func CheckBurstiness(arrivals string, burstiness float64) error {
	if burstiness != 0 && (units.CheckFloat(burstiness, MinBurstiness, MaxBurstiness) != nil || burstiness < MinBurstiness) {
		return fmt.Errorf("%g: want %g to %d (1 is Poisson; lower is burstier)", burstiness, MinBurstiness, MaxBurstiness)
	}
	if arrivals == ArrivalsConstant && burstiness != 0 && burstiness != 1 {
		return fmt.Errorf("%g: only with poisson arrivals (constant arrivals have none)", burstiness)
	}
	return nil
}

// CheckLatencyFrom checks where latencies start.
func CheckLatencyFrom(s string) error {
	switch s {
	case "", LatencySent, LatencyIntended:
		return nil
	}
	return fmt.Errorf("%q: want sent or intended", s)
}

// checkOpenLoop checks the open loop's and the search's settings; each
// error names its field.
func (cfg Config) checkOpenLoop() error {
	if err := CheckArrivals(cfg.Arrivals); err != nil {
		return fmt.Errorf("Arrivals %v", err)
	}
	if err := CheckBurstiness(cfg.Arrivals, cfg.Burstiness); err != nil {
		return fmt.Errorf("Burstiness %v", err)
	}
	if err := CheckLatencyFrom(cfg.LatencyFrom); err != nil {
		return fmt.Errorf("LatencyFrom %v", err)
	}
	if cfg.Search == phases.SearchSpeed && !IsTraceFormat(cfg.Dataset) {
		return errors.New("Search speed: steps a trace's replay speed; give a trace (--dataset mooncake|bailian|burstgpt FILE)")
	}
	return CheckSearch(cfg.Search, cfg.SearchTolerance, cfg.SLO)
}

// shownBurstiness is the burstiness a result records: 0 for constant
// arrivals and a trace's, which have none.
func (cfg Config) shownBurstiness() float64 {
	if cfg.Arrivals == ArrivalsConstant || cfg.trace != nil {
		return 0
	}
	return cfg.Burstiness
}

// arrivals draws an open loop's gaps between intended sends.
type arrivals struct {
	rate  float64
	kind  string
	rng   *rand.Rand
	gamma *distuv.Gamma // burstiness other than 1
	trace *traceFeed    // a trace's own gaps, when replaying one
}

func newArrivals(cfg Config, rate float64, src rand.Source) *arrivals {
	a := &arrivals{rate: rate, kind: cfg.Arrivals, rng: rand.New(src)}
	if a.kind != ArrivalsConstant && cfg.Burstiness > 0 && cfg.Burstiness != 1 {
		// vLLM bench serve: gamma(shape=burstiness, scale=1/(rate×burstiness)).
		a.gamma = &distuv.Gamma{Alpha: cfg.Burstiness, Beta: rate * cfg.Burstiness, Src: src}
	}
	return a
}

// next is the gap to the next intended send.
func (a *arrivals) next() time.Duration {
	if a.trace != nil {
		return a.trace.gap()
	}
	var s float64
	switch {
	case a.kind == ArrivalsConstant:
		s = 1 / a.rate
	case a.gamma != nil:
		s = a.gamma.Rand()
	default:
		s = a.rng.ExpFloat64() / a.rate
	}
	return time.Duration(s * float64(time.Second))
}

// schedule tracks an open-loop level's measured sends against their
// intended times.
type schedule struct {
	n                     int
	firstSched, lastSched float64
	firstSent, lastSent   float64
}

// add takes one measured request's intended and actual send (seconds).
func (s *schedule) add(sched, sent float64) {
	if s.n == 0 {
		s.firstSched, s.lastSched, s.firstSent, s.lastSent = sched, sched, sent, sent
	}
	s.n++
	s.firstSched, s.lastSched = math.Min(s.firstSched, sched), math.Max(s.lastSched, sched)
	s.firstSent, s.lastSent = math.Min(s.firstSent, sent), math.Max(s.lastSent, sent)
}

// rates are the scheduled and achieved rates: sends after the first over
// the span from the first to the last (0 with fewer than two).
func (s *schedule) rates() (scheduled, achieved float64) {
	if s.n < 2 {
		return 0, 0
	}
	if d := s.lastSched - s.firstSched; d > 0 {
		scheduled = float64(s.n-1) / d
	}
	if d := s.lastSent - s.firstSent; d > 0 {
		achieved = float64(s.n-1) / d
	}
	return scheduled, achieved
}

// openLoopResult is an open-loop level's schedule against what was sent,
// and the warning when the client fell behind it.
func (l *level) openLoopResult(lr *phases.LevelResult) *warning {
	cfg := l.cfg
	sc := &phases.Schedule{Arrivals: cfg.arrivalsName(), Burstiness: cfg.shownBurstiness(), RequestedRate: l.rate,
		Requests: l.sched.n, LatencyFrom: cfg.LatencyFrom}
	sc.ScheduledRate, sc.AchievedRate = l.sched.rates()
	if tr := cfg.TraceSummary(); tr != nil {
		sc.TraceSpeed = l.speed
		if tr.BlockTokens > 0 {
			sc.TraceReuse = &tr.ImpliedReuse
		}
	}
	if l.agg.lag.TotalCount() > 0 {
		sc.P50DelayMs = float64(l.agg.lag.ValueAtQuantile(50)) / 1e3
		sc.P99DelayMs = float64(l.agg.lag.ValueAtQuantile(99)) / 1e3
		sc.MaxDelayMs = ms(l.agg.maxLag)
	}
	lr.Schedule = sc
	var why []string
	if sc.P99DelayMs > ms(cfg.ClientBoundLag) {
		why = append(why, fmt.Sprintf("p99 scheduling delay %.1f ms (p50 %.1f ms) is over %.0f ms", sc.P99DelayMs, sc.P50DelayMs, ms(cfg.ClientBoundLag)))
	}
	if sc.ScheduledRate > 0 && sc.AchievedRate < fellBehindShare*sc.ScheduledRate {
		why = append(why, fmt.Sprintf("it sent %.3g req/s of the %.3g scheduled (%g requested)", sc.AchievedRate, sc.ScheduledRate, l.rate))
	}
	if len(why) == 0 {
		return nil
	}
	sc.FellBehind = true
	text := "the client fell behind its schedule: " + strings.Join(why, "; ")
	if cfg.LatencyFrom == LatencyIntended {
		text += "; latencies start at the intended send time (--latency-from intended), so the wait is in them"
	} else {
		text += "; latencies start at the actual send, so the wait is not in them (--latency-from intended counts it)"
	}
	sc.Why = text
	return &warning{warnBehind, text}
}

// LatencyWords says where a level's latencies start.
func LatencyWords(from string) string {
	if from == LatencyIntended {
		return "TTFT and E2EL from the intended send time"
	}
	return "TTFT and E2EL from the actual send"
}

// fromIntended moves the request's latencies' start from its actual send
// to its intended one: the coordinated-omission correction. TPOT and ITL,
// gaps inside the stream, do not change.
func (rec *Record) fromIntended() {
	lag := rec.sendLag
	if lag <= 0 {
		return
	}
	if rec.TTFBms > 0 {
		rec.TTFBms += ms(lag)
	}
	if rec.TTFATms > 0 {
		rec.TTFATms += ms(lag)
	}
	if rec.ttft > 0 {
		rec.ttft += lag
		rec.TTFTms = ms(rec.ttft)
	}
	if rec.e2el > 0 {
		rec.e2el += lag
		if rec.E2ELms > 0 {
			rec.E2ELms = ms(rec.e2el)
		}
	}
}

// lateLive passes a request's live figures on with its TTFT measured from
// its intended send (--latency-from intended).
type lateLive struct {
	*tickStats
	lag time.Duration
}

func (l lateLive) firstToken(d time.Duration) { l.tickStats.firstToken(d + l.lag) }

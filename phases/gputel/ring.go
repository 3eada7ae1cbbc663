package gputel

import (
	"fmt"
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// round is one sampling round, kept compact: NaN is a value not given.
type round struct {
	at   time.Time
	gpus []gpuRound
}

type gpuRound struct {
	util, power, clock, pviol, tviol, pcie, nvl float32
}

// ring keeps the last cap rounds; older ones are overwritten in place.
type ring struct {
	rounds []round
	next   int // where the next round goes once full
	cap    int
}

func f32(p *float64) float32 {
	if p == nil {
		return float32(math.NaN())
	}
	return float32(*p)
}

// sum2 is a+b, NaN when both are unknown.
func sum2(a, b *float64) float32 {
	switch {
	case a == nil && b == nil:
		return float32(math.NaN())
	case a == nil:
		return float32(*b)
	case b == nil:
		return float32(*a)
	}
	return float32(*a + *b)
}

func (r *ring) add(s phases.GPUTelSample) {
	var rd *round
	if len(r.rounds) < r.cap {
		r.rounds = append(r.rounds, round{})
		rd = &r.rounds[len(r.rounds)-1]
	} else {
		rd = &r.rounds[r.next]
		r.next = (r.next + 1) % r.cap
	}
	rd.at = s.At
	rd.gpus = rd.gpus[:0]
	for _, g := range s.GPUs {
		rd.gpus = append(rd.gpus, gpuRound{util: f32(g.UtilPct), power: f32(g.PowerW), clock: f32(g.SMClockMHz),
			pviol: f32(g.PowerViolPct), tviol: f32(g.ThermalViolPct),
			pcie: sum2(g.PCIeRxGBs, g.PCIeTxGBs), nvl: sum2(g.NVLinkRxGBs, g.NVLinkTxGBs)})
	}
}

// each calls f for the rounds in [from, to], oldest first.
func (r *ring) each(from, to time.Time, f func(*round)) {
	n := len(r.rounds)
	for i := range n {
		rd := &r.rounds[(r.next+i)%n]
		if !rd.at.Before(from) && !rd.at.After(to) {
			f(rd)
		}
	}
}

// oldest is the first round kept (zero when none).
func (r *ring) oldest() time.Time {
	if len(r.rounds) == 0 {
		return time.Time{}
	}
	return r.rounds[r.next%len(r.rounds)].at
}

// stat gathers one figure: a mean over values, a min and a max.
type stat struct {
	sum      float64
	n        int
	min, max float64
}

func (s *stat) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.sum += v
	s.n++
}

func (s stat) mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// levelAcc gathers a window's rounds.
type levelAcc struct {
	power, util, clock, pviol, tviol, pcie, nvl stat
	gpus, rounds                                int
}

func (a *levelAcc) round(rd *round) {
	a.rounds++
	a.gpus = max(a.gpus, len(rd.gpus))
	var p, u, pc, nv stat
	for _, g := range rd.gpus {
		p.add(float64(g.power))
		u.add(float64(g.util))
		pc.add(float64(g.pcie))
		nv.add(float64(g.nvl))
		a.clock.add(float64(g.clock))
		a.pviol.add(float64(g.pviol))
		a.tviol.add(float64(g.tviol))
	}
	if p.n > 0 {
		a.power.add(p.sum)
	}
	if u.n > 0 {
		a.util.add(u.mean())
	}
	if pc.n > 0 {
		a.pcie.add(pc.sum)
	}
	if nv.n > 0 {
		a.nvl.add(nv.sum)
	}
}

// throttleAt is the share of time held down above which a level is said
// to be throttled.
const throttleAt = 5.0

// Level sums up the rounds between from and to (a level's throughput
// window) with outputTokens received in it; nil when the sampler has no
// source. A window with no round still gives a summary that says so.
func (s *Sampler) Level(from, to time.Time, outputTokens float64) *phases.GPULevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src.Source == "" || !to.After(from) {
		return nil
	}
	var a levelAcc
	// A round stamps the second before it; take the one just after the
	// window's end too.
	s.rb.each(from, to.Add(s.opt.Interval/2), a.round)
	lv := &phases.GPULevel{Source: s.src.Source, GPUs: a.gpus, Samples: a.rounds, Start: from.UTC(), WindowS: to.Sub(from).Seconds(),
		EnergySource: s.src.Energy}
	if a.rounds == 0 {
		lv.Note = "no GPU sample fell in the level's window"
		return lv
	}
	if a.power.n == 0 && a.util.n == 0 && a.clock.n == 0 {
		lv.NoReadings = true
		lv.Note = fmt.Sprintf("the %d GPU sample(s) in the level's window held no power, SM or clock reading: unknown", a.rounds)
		return lv
	}
	if old := s.rb.oldest(); old.After(from) && len(s.rb.rounds) == s.rb.cap {
		lv.Note = fmt.Sprintf("the ring holds the last %s of samples: the window's start is older", s.opt.Keep)
	}
	lv.MeanPowerW, lv.PeakPowerW = a.power.mean(), a.power.max
	lv.MeanUtilPct, lv.PeakUtilPct = a.util.mean(), a.util.max
	lv.MeanSMClockMHz, lv.MinSMClockMHz, lv.PeakSMClockMHz = a.clock.mean(), a.clock.min, a.clock.max
	lv.PowerThrottlePct, lv.ThermalThrottlePct = a.pviol.mean(), a.tviol.mean()
	switch {
	case lv.PowerThrottlePct >= throttleAt && lv.ThermalThrottlePct >= throttleAt:
		lv.Throttle = "power+thermal"
	case lv.PowerThrottlePct >= throttleAt:
		lv.Throttle = "power"
	case lv.ThermalThrottlePct >= throttleAt:
		lv.Throttle = "thermal"
	}
	lv.EnergyJ = lv.MeanPowerW * lv.WindowS
	if outputTokens > 0 && a.power.n > 0 {
		lv.JPerOutputToken = lv.EnergyJ / outputTokens
	}
	if a.pcie.n > 0 {
		v := a.pcie.mean()
		lv.PCIeGBs = &v
	}
	if s.src.NVLink && a.nvl.n > 0 {
		v := a.nvl.mean()
		lv.NVLinkGBs = &v
	}
	return lv
}

package load

import (
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

const (
	// growthGiB is the least memory growth that counts as progress
	// (nvidia-smi readings wobble by a few MiB).
	growthGiB = 0.05
	// rateWindow is how far back the per-GPU rate looks.
	rateWindow = 30 * time.Second
	// rateQuiet: after this long without growth a GPU's rate reads 0
	// rather than the average of a window that still holds old growth.
	rateQuiet = 15 * time.Second
	// plateauAfter is how long memory must stay flat to call it a plateau.
	plateauAfter = 60 * time.Second
)

// Tracker is the load's state, fed by GPU samples and log records with
// their times. It is pure (the caller supplies the clock), so stall
// detection is tested with a fake clock.
type Tracker struct {
	host       string
	expect     float64
	stallAfter time.Duration

	start        time.Time
	gpus         map[int]*gpuTrack
	sum          *vllmlog.Summary
	stage        int
	lastProgress time.Time
	armed        bool
	lastBar      vllmlog.Bar
	barSeen      bool
	lastLine     string
	ready        bool
	stopped      bool
	failure      *phases.LoadFailure
	failStrong   bool
	sumFail      *vllmlog.Failure // the summary's failure last seen
	stall        *phases.Stall
	gen          int
	ranks        map[int]*rankTrack // what each worker rank's log lines told
}

// rankTrack is one rank's furthest stage and last line.
type rankTrack struct {
	stage int
	line  string
}

type gpuTrack struct {
	name        string
	known       bool
	used, total float64
	util        float64
	utilKnown   bool
	power       float64 // W; 0 when nvidia-smi gave none
	ref         float64 // memory at the last growth
	lastGrowth  time.Time
	peak        float64
	hist        []memPoint
}

type memPoint struct {
	t   time.Time
	gib float64
}

// NewTracker starts tracking a load on host at now. expectGiB is the
// expected weights per GPU (0: from the log, else the plateau); stallAfter
// the minimum silence before a stall (more than 0: the watcher checks it).
func NewTracker(host string, expectGiB float64, stallAfter time.Duration, now time.Time) *Tracker {
	t := &Tracker{host: host, expect: expectGiB, stallAfter: stallAfter}
	t.Reset(now)
	return t
}

// Reset starts a new load (the server restarted or the log was replaced).
func (t *Tracker) Reset(now time.Time) {
	t.gen++
	t.start, t.lastProgress = now, now
	t.sum = vllmlog.NewSummary()
	t.stage, t.armed, t.barSeen, t.ready, t.stopped = 0, false, false, false, false
	t.failure, t.failStrong, t.stall, t.lastLine, t.sumFail = nil, false, nil, "", nil
	t.ranks = map[int]*rankTrack{}
	if t.gpus == nil {
		t.gpus = map[int]*gpuTrack{}
	}
	for _, g := range t.gpus {
		g.ref, g.peak, g.hist, g.lastGrowth = g.used, g.used, nil, now
	}
}

// SetStopped marks the server as stopped on purpose: no stall while stopped.
func (t *Tracker) SetStopped(now time.Time, stopped bool) {
	t.stopped = stopped
	t.lastProgress = now
	t.stall = nil
	if stopped {
		t.ready = false
	}
}

// Sample folds one nvidia-smi poll in.
func (t *Tracker) Sample(now time.Time, gpus []smi.GPU) {
	for _, s := range gpus {
		g := t.gpus[s.Index]
		if g == nil {
			g = &gpuTrack{lastGrowth: now}
			t.gpus[s.Index] = g
			if s.MemoryUsedMiB != nil {
				g.ref = *s.MemoryUsedMiB / 1024
			}
		}
		g.name = s.Name
		g.known = s.MemoryUsedMiB != nil
		if s.MemoryTotalMiB != nil {
			g.total = *s.MemoryTotalMiB / 1024
		}
		g.utilKnown = s.UtilizationPct != nil
		if g.utilKnown {
			g.util = *s.UtilizationPct
		}
		g.power = 0
		if s.PowerW != nil {
			g.power = *s.PowerW
		}
		if !g.known {
			continue
		}
		g.used = *s.MemoryUsedMiB / 1024
		g.hist = append(g.hist, memPoint{now, g.used})
		for len(g.hist) > 2 && now.Sub(g.hist[0].t) > rateWindow {
			g.hist = g.hist[1:]
		}
		switch {
		case g.used >= g.ref+growthGiB:
			g.ref, g.lastGrowth = g.used, now
			t.progress(now)
		case g.used < g.ref-growthGiB:
			g.ref = g.used // memory freed: not progress, but growth counts again from here
		}
		if g.used > g.peak {
			g.peak = g.used
		}
	}
}

// progress notes that the load moved.
func (t *Tracker) progress(now time.Time) {
	t.lastProgress = now
	t.armed = true
	t.stall = nil
}

// Record folds one log record in. It returns the milestone reached (stage
// entered) and the failure when the record names a new or more specific one.
func (t *Tracker) Record(now time.Time, r vllmlog.Record) (ms *phases.Milestone, fail *phases.LoadFailure) {
	t.sum.Add(r)
	if r.Proc != "" || r.Level != "" || strings.TrimSpace(r.Text) != "" {
		t.armed = true // any line: something was launched, and its silence can be a stall
	}
	if r.Relevant() {
		t.lastLine = r.Text
	}
	if r.Rank >= 0 && r.Proc != "" {
		rt := t.ranks[r.Rank]
		if rt == nil {
			rt = &rankTrack{}
			t.ranks[r.Rank] = rt
		}
		if st := r.Stage(); st != "" {
			rt.stage = max(rt.stage, phases.StageIndex(st))
		}
		if strings.TrimSpace(r.Msg) != "" {
			rt.line = r.Text
		}
	}
	moved := r.Progress()
	if r.Bar != nil {
		moved = !t.barSeen || r.Bar.Done != t.lastBar.Done || r.Bar.Desc != t.lastBar.Desc
		if r.Kind == vllmlog.KindShardBar {
			t.lastBar, t.barSeen = *r.Bar, true
		}
	}
	if moved {
		t.progress(now)
	}
	if st := r.Stage(); st != "" {
		if i := phases.StageIndex(st); i > t.stage {
			t.stage = i
			ms = &phases.Milestone{Stage: st, AtS: now.Sub(t.start).Seconds(), Line: r.Text, Load: t.gen}
		}
	}
	// The summary's failure model (messages, tracebacks and their
	// frames) decides; a new or stronger failure is reported again.
	if f := t.sum.Failure; f != nil && f != t.sumFail {
		t.sumFail = f
		if t.failure == nil || !t.failStrong || r.Strong {
			t.failure = &phases.LoadFailure{Kind: f.Kind, Line: f.Line, Rank: f.Rank, When: f.When, Component: f.Component}
			t.failStrong = r.Strong
			fail = t.failure
		}
	}
	return ms, fail
}

// Ranks is each worker rank's furthest stage and last log line, for a
// diagnosis (ranks that printed no prefixed line are not listed).
func (t *Tracker) Ranks() []phases.RankEvidence {
	out := make([]phases.RankEvidence, 0, len(t.ranks))
	for r, rt := range t.ranks {
		out = append(out, phases.RankEvidence{Rank: r, Stage: phases.StageOrder[rt.stage], LastLine: rt.line})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// Stage is the load's furthest stage.
func (t *Tracker) Stage() string { return phases.StageOrder[t.stage] }

// SetReady records that /health answered 200; it returns the ready
// milestone the first time.
func (t *Tracker) SetReady(now time.Time) *phases.Milestone {
	if t.ready {
		return nil
	}
	t.ready, t.stall = true, nil
	t.stage = phases.StageIndex(phases.StageReady)
	return &phases.Milestone{Stage: phases.StageReady, AtS: now.Sub(t.start).Seconds(), Value: "GET /health 200", Load: t.gen}
}

// Exited records that the server process exited during the load: the
// load's failure, unless it is ready, stopped or already failed (nil
// then).
func (t *Tracker) Exited(f phases.LoadFailure) *phases.LoadFailure {
	if t.failure != nil || t.ready || t.stopped {
		return nil
	}
	t.failure, t.failStrong, t.stall = &f, true, nil
	return t.failure
}

// Ready reports whether /health answered 200.
func (t *Tracker) Ready() bool { return t.ready }

// Failure is the failure the log showed, nil when none.
func (t *Tracker) Failure() *phases.LoadFailure { return t.failure }

// threshold is the silence that counts as a stall: the configured time, or
// 5× the bar's current seconds per shard when that is longer.
func (t *Tracker) threshold() time.Duration {
	th := t.stallAfter
	if t.barSeen && t.lastBar.Done < t.lastBar.Total {
		if b := time.Duration(5 * t.lastBar.SecPerIt * float64(time.Second)); b > th {
			th = b
		}
	}
	return th
}

// CheckStall returns a stall the first time the load has been silent for
// the threshold (nil otherwise). The current stall, if any, stays in State.
func (t *Tracker) CheckStall(now time.Time) *phases.Stall {
	if t.ready || t.stopped || t.failure != nil || !t.armed {
		return nil
	}
	idle := now.Sub(t.lastProgress)
	if idle < t.threshold() {
		return nil
	}
	fresh := t.stall == nil
	st := &phases.Stall{ForS: idle.Seconds(), Line: t.lastLine, Waits: WaitsText(t.sum.Stalls)}
	for _, i := range t.order() {
		g := t.gpus[i]
		if !g.known {
			continue
		}
		if exp := t.expected(g); exp.gib > 0 && g.used >= exp.gib*0.995 && !t.allDone() {
			continue // this one finished; name the GPUs that did not
		}
		st.GPUs = append(st.GPUs, i)
		st.MemoryGiB = append(st.MemoryGiB, round1(g.used))
	}
	t.stall = st
	if fresh {
		return st
	}
	return nil
}

// allDone reports whether every GPU reached its expected memory.
func (t *Tracker) allDone() bool {
	for _, g := range t.gpus {
		if e := t.expected(g); g.known && (e.gib == 0 || g.used < e.gib*0.995) {
			return false
		}
	}
	return true
}

type expectation struct {
	gib  float64
	from string
}

func (t *Tracker) expected(g *gpuTrack) expectation {
	switch {
	case t.expect > 0:
		return expectation{t.expect, "campaign"}
	case t.sum.WeightsGiB != nil:
		return expectation{*t.sum.WeightsGiB, "log"}
	case g.peak > 1 && !g.lastGrowth.IsZero() && len(g.hist) > 0 && g.hist[len(g.hist)-1].t.Sub(g.lastGrowth) >= plateauAfter:
		return expectation{g.peak, "plateau"}
	}
	return expectation{}
}

func (t *Tracker) order() []int {
	idx := make([]int, 0, len(t.gpus))
	for i := range t.gpus {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx
}

// State is the load's progress at now.
func (t *Tracker) State(now time.Time) phases.LoadState {
	st := phases.LoadState{Host: t.host, Stage: phases.StageOrder[t.stage], ElapsedS: now.Sub(t.start).Seconds(),
		IdleS: now.Sub(t.lastProgress).Seconds(), Ready: t.ready, Failure: t.failure, Stall: t.stall, Load: t.gen}
	switch {
	case t.failure != nil:
		st.Stage = phases.StageFailed
	case t.stopped:
		st.Stage = phases.StageStopped
	}
	if t.sum.Version != nil {
		st.VLLM = *t.sum.Version
	}
	st.Engine = t.sum.Engine
	if t.sum.WeightsGiB != nil {
		st.WeightsGiB = *t.sum.WeightsGiB
	}
	if t.sum.KVCacheTokens != nil {
		st.KVCacheTokens = *t.sum.KVCacheTokens
	}
	if t.barSeen {
		st.ShardsDone, st.ShardsTotal = t.lastBar.Done, t.lastBar.Total
		st.ShardSecPerIt = t.lastBar.SecPerIt
		if t.lastBar.RemainingS >= 0 && t.lastBar.Done < t.lastBar.Total {
			st.ShardETA = t.lastBar.RemainingS
		}
	}
	weightsPhase := t.stage <= phases.StageIndex(phases.StageWeights) && !t.ready
	for _, i := range t.order() {
		g := t.gpus[i]
		gl := phases.GPULoad{Index: i, Host: t.host, Known: g.known, Name: g.name, TotalGiB: round2(g.total),
			UtilPct: g.util, UtilKnown: g.utilKnown, PowerW: round2(g.power)}
		if g.known {
			gl.UsedGiB = round2(g.used)
			if now.Sub(g.lastGrowth) < rateQuiet {
				gl.RateGiBMin = round2(rate(g.hist))
			}
			exp := t.expected(g)
			gl.ExpectedGiB, gl.ExpectFrom = round2(exp.gib), exp.from
			if weightsPhase && exp.gib > g.used && gl.RateGiBMin > 0.01 {
				gl.ETASeconds = (exp.gib - g.used) / gl.RateGiBMin * 60
			}
		}
		st.GPUs = append(st.GPUs, gl)
	}
	return st
}

// rate is the memory growth over the window, in GiB per minute.
func rate(h []memPoint) float64 {
	if len(h) < 2 {
		return 0
	}
	a, b := h[0], h[len(h)-1]
	dt := b.t.Sub(a.t).Minutes()
	if dt < 3.0/60 {
		return 0
	}
	r := (b.gib - a.gib) / dt
	if r < 0 {
		return 0
	}
	return r
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

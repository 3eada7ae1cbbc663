package macro

import (
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/profdeck/profdeck/phases"
)

// levelUsers is a multi-turn level's users: each sends its session's
// turns one at a time, the next one its think time after the answer; the
// level's concurrency is the number of users.
type levelUsers struct {
	feed  *convFeed
	users []*convUser
	timer *time.Timer
	agg   sessAgg
}

func newLevelUsers(feed *convFeed, maxLen int) *levelUsers {
	feed.maxLen = maxLen
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &levelUsers{feed: feed, timer: t}
}

// refillUsers adds users up to target and sends the turns that are due.
func (l *level) refillUsers(now time.Time, target int) {
	lu := l.users
	for len(lu.users) < target {
		u := &convUser{id: len(lu.users)}
		lu.feed.begin(u, now, true)
		lu.agg.started++
		lu.users = append(lu.users, u)
	}
	for _, u := range lu.users[:min(target, len(lu.users))] {
		if l.enough() {
			return
		}
		if u.busy || u.due.After(now) {
			continue
		}
		t, ok := lu.feed.request(u, l.r.pg.tokensPerWrd, l.cfg.OutputLen)
		if !ok { // the history no longer fits: the next conversation
			lu.agg.ctxEnded++
			lu.feed.begin(u, now, false)
			u.due = u.due.Add(time.Millisecond) // a conversation that never fits cannot spin the dispatcher
			lu.agg.started++
			continue
		}
		if u.turn == 0 {
			u.started = now
		}
		u.busy = true
		l.launchReq(u.due, &t)
	}
}

// usersWake is a channel that fires when the next idle user's think time
// ends (nil when no user waits).
func (l *level) usersWake(now time.Time) <-chan time.Time {
	lu := l.users
	var next time.Time
	for _, u := range lu.users[:min(l.r.s.Concurrency(), len(lu.users))] {
		if !u.busy && (next.IsZero() || u.due.Before(next)) {
			next = u.due
		}
	}
	if next.IsZero() {
		return nil
	}
	lu.timer.Reset(max(next.Sub(now), 0))
	return lu.timer.C
}

// userDone takes a user's ended turn: the history grows by the real
// answer, the session goes on or ends, and the user's next turn is due
// after its think time.
func (l *level) userDone(rec *Record, now time.Time) {
	lu := l.users
	if rec.user >= len(lu.users) {
		return
	}
	u := lu.users[rec.user]
	u.busy = false
	if !rec.Warmup {
		lu.agg.turn(rec)
	}
	if rec.Failure == FailCancelled {
		return
	}
	if !lu.feed.answered(u, rec) {
		u.due = now.Add(lu.feed.thinkBefore(u))
		return
	}
	if rec.Completed() {
		lu.agg.completed++
		lu.agg.turnsDone += u.turn
		lu.agg.durs = append(lu.agg.durs, now.Sub(u.started).Seconds())
	} else {
		lu.agg.failed++
	}
	lu.feed.begin(u, now, false)
	lu.agg.started++
}

// sessAgg sums a level's sessions and its turns by index.
type sessAgg struct {
	turns                                []*turnAgg // index turn-1, the last holding the later ones
	started, completed, failed, ctxEnded int
	turnsDone                            int
	durs                                 []float64
}

// turnAgg is one turn index's measured turns.
type turnAgg struct {
	done, failed     int
	in               int64
	cached, cachedIn int64 // cached tokens, and the input tokens of the turns that said them
	ttft, tpot       *hdrhistogram.Histogram
}

// turn counts one measured turn under its index.
func (a *sessAgg) turn(rec *Record) {
	i := min(rec.Turn, phases.MaxTurnIndex) - 1
	for len(a.turns) <= i {
		a.turns = append(a.turns, &turnAgg{ttft: newHist(), tpot: newHist()})
	}
	t := a.turns[i]
	if !rec.Completed() {
		if rec.Failure != FailCancelled {
			t.failed++
		}
		return
	}
	t.done++
	t.in += int64(rec.InputTokens)
	if rec.CachedTokens != nil {
		t.cached += int64(*rec.CachedTokens)
		t.cachedIn += int64(rec.InputTokens)
	}
	recordDur(t.ttft, rec.ttft, 1)
	if rec.OutputTokens > 1 {
		recordDur(t.tpot, rec.tpot, 1)
	}
}

// result is the level's sessions and turns as the result records them.
func (lu *levelUsers) result(users int, cfg Config) *phases.SessionLevel {
	a := &lu.agg
	s := &phases.SessionLevel{Users: users, ThinkTimeS: cfg.ThinkTime.Seconds(), Header: cfg.SessionHeader,
		Started: a.started, Completed: a.completed, Failed: a.failed, ContextEnded: a.ctxEnded, Turns: []phases.TurnLevel{}}
	if n := len(a.durs); n > 0 {
		sort.Float64s(a.durs)
		sum := 0.0
		for _, d := range a.durs {
			sum += d
		}
		q := func(p float64) float64 { return a.durs[min(int(p*float64(n)), n-1)] }
		s.MeanDurationS, s.P50DurationS, s.P90DurationS, s.MaxDurationS = sum/float64(n), q(0.5), q(0.9), a.durs[n-1]
		s.MeanTurns = float64(a.turnsDone) / float64(n)
	}
	for i, t := range a.turns {
		tl := phases.TurnLevel{Turn: i + 1, Completed: t.done, Failed: t.failed}
		if t.done > 0 {
			tl.MeanInputTokens = float64(t.in) / float64(t.done)
			tl.MedianTTFTms, tl.P90TTFTms = histMs(t.ttft, 50), histMs(t.ttft, 90)
			tl.MedianTPOTms, tl.P90TPOTms = histMs(t.tpot, 50), histMs(t.tpot, 90)
		}
		if t.cachedIn > 0 {
			tl.PrefixHitRate = new(float64(t.cached) / float64(t.cachedIn))
		}
		s.Turns = append(s.Turns, tl)
	}
	return s
}

// histMs is a histogram's percentile p in milliseconds (0 when empty).
func histMs(h *hdrhistogram.Histogram, p float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return float64(h.ValueAtQuantile(p)) / 1e3
}

package macro

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/profdeck/profdeck/phases"
)

// level is the state of one running level, shared by its steps: start,
// dispatch (launch, onDone, the per-second tick) and result.
type level struct {
	r       *runner
	cfg     Config
	conc    int
	rate    float64
	arrived int // the open loop's arrivals so far, each agent's or not (Config.Shard)
	notes   []string
	lctx    context.Context // the requests' context
	cancel  context.CancelFunc

	agg         *levelAgg
	ttfb, ttfat *hdrhistogram.Histogram
	ts          *tickStats
	done        chan *Record
	cpu0        time.Duration
	start       time.Time
	maxSends    int // requests to send at least; -1: no request count
	// timeLeft is true while the level's duration has not run out: with
	// both a request count and a duration, the level ends at whichever
	// comes last.
	timeLeft bool
	// raisedFrom is the request count asked for when the level raised it
	// to 2×C (0: not raised).
	raisedFrom   int
	arr          *arrivals // an open loop's gaps
	speed        float64   // a trace's replay speed factor (0: no trace)
	arrivalTimer *time.Timer
	users        *levelUsers // a multi-turn level's users (nil: single requests)
	sched        schedule    // an open loop's intended sends against its actual ones
	sat          saturation  // TTFT and in flight against time
	satFrom      time.Time   // the first measured completion: the fits start there
	satWhy       string      // why sending stopped early: over-saturated

	sent, inFlight, measuredDone int
	measuredStart                time.Time
	schedEnd                     time.Time // a timed open loop's window end on its schedule (zero: none)
	deadline                     <-chan time.Time
	sendingOver                  bool
	inflightArea                 float64 // ∫ in-flight dt over the measured window
	lastChange                   time.Time
	// steered says what the operator changed while the level ran.
	steered []string
	// series is the level's ticks, journalled at its end for the charts.
	series      phases.MacroSeries
	pausedSince time.Time
	pausedTotal time.Duration
	lastTarget  int
	nextArrival time.Time
	cancelled   error

	// The throughput window of a closed-loop level: from the first
	// measured send until the in-flight count first drops below the
	// target once sending is over, so the tail, where fewer than C run,
	// does not dilute it.
	tok0, tokEnd int64
	winEnd       time.Time
	winArea      float64
	freed        []time.Time // when the slots not yet refilled freed
	steady       bool        // no pause and no live concurrency change
	capped       bool        // an open loop reached MaxOpenInFlight
	win          window      // the server's counter at the window's edges
}

// MaxOpenInFlight bounds an open-loop level's requests in flight: past it,
// arrivals wait for a request to end (the wait is their send lag, and the
// level says so), so a rate the client or the server cannot keep up with
// costs bounded memory.
const MaxOpenInFlight = 4096

// maxOpenInFlight is MaxOpenInFlight, lowered by tests.
var maxOpenInFlight = MaxOpenInFlight

// startLevel sets a level up and announces it.
func (r *runner) startLevel(ctx context.Context, conc int, rate float64) *level {
	cfg := r.cfg
	l := &level{r: r, conc: conc, rate: rate}
	// C requests cannot stay in flight with fewer than C to send: a level
	// gets at least two rounds of measured requests.
	if rate == 0 && cfg.Requests > 0 && cfg.Requests < 2*conc {
		l.raisedFrom = cfg.Requests
		cfg.Requests = 2 * conc
	}
	spanNote := r.openLoopSpan(&cfg, rate)
	l.cfg = cfg
	if spanNote != "" {
		l.notes = append(l.notes, spanNote)
	}
	s := r.s
	s.mu.Lock()
	s.target = conc
	s.mu.Unlock()
	r.srvMu.Lock()
	r.srvSamples = r.srvSamples[:0]
	r.srvMu.Unlock()

	r.em.Emit(ctx, phases.KindMacroLevelStarted, &phases.LevelStarted{Concurrency: conc, Rate: rate,
		Requests: cfg.Requests, DurationS: cfg.Duration.Seconds(), Run: r.run, Runs: r.runs})

	l.lctx, l.cancel = context.WithCancel(ctx)
	l.agg = newLevelAgg()
	l.agg.outputLen = cfg.fixedOutputLen()
	l.agg.slo = cfg.slo
	l.agg.pcts = cfg.Percentiles
	l.ttfb, l.ttfat = newHist(), newHist()
	l.ts = &tickStats{ttft: newHist(), tpot: newHist()}
	l.done = make(chan *Record, 256)
	l.cpu0 = cpuTime()
	l.start = time.Now()
	l.lastChange, l.nextArrival = l.start, l.start
	l.lastTarget = conc
	if rate > 0 {
		l.arr = newArrivals(cfg, rate, rand.NewPCG(uint64(cfg.Seed), uint64(conc)+uint64(rate*1000)))
		l.speed = r.levelSpeed()
		l.arr.trace = cfg.trace.restart(l.speed)
	}
	l.steady = true
	if cfg.conv != nil && rate == 0 {
		l.users = newLevelUsers(cfg.conv, r.c.maxLen[cfg.Model])
	}
	l.maxSends = -1
	if cfg.Requests > 0 {
		l.maxSends = cfg.Warmup + cfg.Requests
	}
	l.timeLeft = cfg.Duration > 0
	return l
}

// raisedNote says the request count was raised, and how many were
// measured when the level ended before the raised count.
func (l *level) raisedNote(measured int) string {
	s := fmt.Sprintf("measured requests raised from %d to %d so that %d stay in flight", l.raisedFrom, l.cfg.Requests, l.conc)
	if measured < l.cfg.Requests {
		s += fmt.Sprintf("; the level ended after %d of them", measured)
	}
	return s
}

// enough reports whether the level has sent what it was asked for: its
// requests (when counted) and its duration (when timed), whichever comes
// last.
func (l *level) enough() bool {
	return (l.maxSends < 0 || l.sent >= l.maxSends) && !l.timeLeft
}

// accountInFlight adds the in-flight count since its last change to the
// measured window's area.
func (l *level) accountInFlight(now time.Time) {
	if !l.measuredStart.IsZero() {
		from := l.lastChange
		if from.Before(l.measuredStart) {
			from = l.measuredStart
		}
		if now.After(from) {
			l.inflightArea += float64(l.inFlight) * now.Sub(from).Seconds()
		}
	}
	l.lastChange = now
}

// dispatchDelay holds the dispatcher this long at every send: a
// deliberately slow client, for tests.
var dispatchDelay time.Duration

// launch sends the next request; scheduled is when it was due.
func (l *level) launch(scheduled time.Time) { l.launchReq(scheduled, nil) }

// launchReq sends a session's turn t, or the next request when t is nil;
// scheduled is when it was due.
func (l *level) launchReq(scheduled time.Time, t *turnReq) {
	r, cfg := l.r, l.cfg
	if dispatchDelay > 0 {
		time.Sleep(dispatchDelay)
	}
	idx := l.sent
	l.sent++
	warm := idx < cfg.Warmup
	var prompt string
	var inTok, outTok int
	if t == nil {
		prompt, inTok, outTok = r.nextPrompt()
	} else {
		prompt, inTok, outTok = t.prompt, t.in, t.out
	}
	now := time.Now()
	l.accountInFlight(now)
	l.inFlight++
	if !warm && !l.satFrom.IsZero() {
		l.sat.queue.add(now.Sub(l.start).Seconds(), float64(l.inFlight))
	}
	if !warm && l.measuredStart.IsZero() {
		l.openWindow(now, scheduled)
	}
	conc, rate, lctx, ts, done := l.conc, l.rate, l.lctx, l.ts, l.done
	go func() {
		rec := &Record{Concurrency: conc, Rate: rate, Index: idx, Warmup: warm, InputTokens: inTok, maxTokens: outTok}
		if t != nil {
			rec.Session, rec.Turn, rec.user, rec.msgs, rec.wantText = t.session, t.turn, t.user, t.msgs, true
		}
		at := time.Now()
		rec.sendLag = max(at.Sub(scheduled), 0)
		rec.ScheduledS = r.since(scheduled).Seconds()
		rec.SentS = r.since(at).Seconds()
		rec.SendLagMs = ms(rec.sendLag)
		var lv live = ts
		if cfg.LatencyFrom == LatencyIntended && rec.sendLag > 0 {
			lv = lateLive{ts, rec.sendLag} // the live TTFT from the intended send too
		}
		r.c.send(lctx, rec, prompt, lv)
		if rec.endAt.IsZero() {
			rec.endAt = time.Now()
		}
		if cfg.LatencyFrom == LatencyIntended {
			rec.fromIntended()
		}
		rec.end = r.since(rec.endAt)
		done <- rec
	}()
}

// followControls applies the operator's pause and live concurrency to the
// level's bookkeeping.
func (l *level) followControls(now time.Time, paused bool, target int) {
	if paused && l.pausedSince.IsZero() {
		l.pausedSince = now
		l.steady = false
	} else if !paused && !l.pausedSince.IsZero() {
		l.pausedTotal += now.Sub(l.pausedSince)
		l.pausedSince = time.Time{}
		if l.rate > 0 {
			l.nextArrival = now // arrivals missed while paused are not made up
			l.arrivalTimer.Reset(0)
		}
	}
	if target != l.lastTarget && l.rate == 0 {
		note, steered := phases.LiveChange(l.lastTarget, target, now.Sub(l.start).Seconds())
		l.notes, l.steered = append(l.notes, note), append(l.steered, steered)
		l.lastTarget = target
		l.steady = false
	}
}

// refill tops a closed-loop level up to target requests in flight (a
// multi-turn level: sends the turns of its target users that are due).
func (l *level) refill(now time.Time, target int) {
	if l.users != nil {
		l.refillUsers(now, target)
		return
	}
	for l.inFlight < target && !l.enough() {
		// A refill is due when its slot freed (the request's end), so
		// time the dispatcher took counts as send lag.
		due := now
		if len(l.freed) > 0 {
			due, l.freed = l.freed[0], l.freed[1:]
		}
		l.launch(due)
	}
}

// onDone takes one ended request.
func (l *level) onDone(rec *Record) {
	now := time.Now()
	l.accountInFlight(now)
	l.inFlight--
	if l.rate == 0 {
		l.freed = append(l.freed, rec.endAt)
	}
	if l.winEnd.IsZero() && !l.measuredStart.IsZero() && l.sendingOver && rec.Failure != FailCancelled {
		l.winEnd, l.tokEnd, l.winArea = now, l.ts.total.Load(), l.inflightArea
		l.win.closed(l.r, l.ts.total.Load)
	}
	l.r.finish(rec, l.agg, l.ttfb, l.ttfat, l.ts)
	if l.users != nil && rec.Turn > 0 {
		l.userDone(rec, now)
	}
	if !rec.Warmup {
		l.measuredDone++
		l.observe(rec, now)
	}
	// A freed slot is refilled at once: the next request's send lag is
	// measured from now.
}

// dispatch sends the level's requests and takes their ends until sending
// is over and none is in flight.
func (l *level) dispatch(ctx context.Context) {
	s := l.r.s
	if l.rate > 0 {
		l.arrivalTimer = time.NewTimer(0)
		defer l.arrivalTimer.Stop()
	}
	tickNext := l.start.Add(time.Second)
	tick := time.NewTimer(time.Until(tickNext))
	defer tick.Stop()
	for {
		paused, stopping, target := s.state()
		now := time.Now()
		l.followControls(now, paused, target)
		if stopping || l.cancelled != nil || l.enough() {
			l.sendingOver = true
		}
		if !l.sendingOver && !paused && l.rate == 0 {
			l.refill(now, target)
		}
		l.freed = l.freed[:0] // slots not refilled now (paused, lowered) are not owed
		if l.sendingOver && l.inFlight == 0 {
			return
		}
		var arrivals, due <-chan time.Time
		if l.rate > 0 && !l.sendingOver && !paused {
			arrivals = l.openArrivals()
		}
		if l.users != nil && !l.sendingOver && !paused {
			due = l.usersWake(now)
		}
		select {
		case rec := <-l.done:
			l.onDone(rec)
		case <-arrivals:
			if l.timeLeft && l.dueAfterWindow() {
				l.endTime(paused)
				break
			}
			l.arrive()
			l.nextArrival = l.nextArrival.Add(l.arr.next())
			l.arrivalTimer.Reset(time.Until(l.nextArrival))
		case <-due: // a user's think time ended: refilled above
		case <-l.deadline:
			l.endTime(paused)
		case <-s.wake:
		case <-tick.C:
			t := l.r.emitTick(ctx, l.cfg, l.rate, l.inFlight, l.agg, l.ts, l.start, l.measuredStart, l.measuredDone, paused)
			run, wait := l.r.serverNow(time.Now())
			l.series.Add(t, run, wait)
			l.stopIfSaturated()
			tickNext = tickNext.Add(time.Second)
			tick.Reset(time.Until(tickNext))
		case <-ctx.Done():
			if l.cancelled == nil {
				l.cancelled = ctx.Err()
				l.cancel()
			}
		}
	}
}

// openWindow starts the level's measured window at now, its first
// request having been due at due.
func (l *level) openWindow(now, due time.Time) {
	l.measuredStart = now
	l.lastChange = now
	l.tok0 = l.ts.total.Load()
	l.win.opened(l.r, l.ts.total.Load)
	l.agg.start(l.r.since(now))
	switch {
	case l.cfg.Duration > 0 && l.rate > 0: // the schedule's window, from its first due arrival
		l.schedEnd = due.Add(l.cfg.Duration)
		l.deadline = time.After(time.Until(l.schedEnd))
	case l.cfg.Duration > 0:
		l.deadline = time.After(l.cfg.Duration)
	}
}

// dueAfterWindow reports whether a timed open loop's next arrival is due
// at or after its window's end: not the window's to send.
func (l *level) dueAfterWindow() bool {
	return !l.schedEnd.IsZero() && !l.nextArrival.Before(l.schedEnd)
}

// endTime ends the level's duration: an open loop first sends the arrivals
// its window still owes.
func (l *level) endTime(paused bool) {
	l.sendDue(paused)
	l.timeLeft = false
	l.deadline = nil
}

// arrive sends the arrival due, when it is this agent's (Config.Shard);
// another agent's is passed over, its prompt (or trace row) with it.
func (l *level) arrive() {
	n, shards := l.arrived, l.cfg.Shards
	l.arrived++
	if shards < 2 || n%shards == l.cfg.Shard {
		l.launch(l.nextArrival)
		return
	}
	l.r.nextPrompt()
	// The window opens at the schedule's first measured arrival, another
	// agent's or not: every agent's window is then the schedule's.
	if l.measuredStart.IsZero() && l.sent >= l.cfg.Warmup {
		now := time.Now()
		l.accountInFlight(now)
		l.openWindow(now, l.nextArrival)
	}
}

// sendDue sends, as the window closes, the open loop's arrivals due
// within it that a late dispatcher has not sent yet: a level of a duration
// sends its schedule's requests, the late ones with their send lag (which
// the level reports), rather than a rate short by the ones left unsent.
func (l *level) sendDue(paused bool) {
	if paused || l.sendingOver || l.schedEnd.IsZero() {
		return
	}
	for l.nextArrival.Before(l.schedEnd) && l.openArrivals() != nil {
		l.arrive()
		l.nextArrival = l.nextArrival.Add(l.arr.next())
	}
}

// openArrivals is the open loop's arrival timer while a request may be
// sent, nil while the requests in flight are at the cap (the campaign's,
// else MaxOpenInFlight): the level notes the first time it held.
func (l *level) openArrivals() <-chan time.Time {
	limit, why := maxOpenInFlight, ""
	if c := l.cfg.MaxInFlight; c > 0 && c < limit {
		limit, why = c, " (the concurrency cap, as vLLM's --max-concurrency)"
	}
	if l.inFlight < limit {
		return l.arrivalTimer.C
	}
	if !l.capped {
		l.capped = true
		l.notes = append(l.notes, fmt.Sprintf("open loop held at %d requests in flight%s: later arrivals waited for a free slot (their wait is send lag)", limit, why))
	}
	return nil
}

// result sums the level up once its last request ended.
func (l *level) result(ctx context.Context) *phases.LevelResult {
	l.accountInFlight(time.Now())
	cpu := cpuTime() - l.cpu0
	if !l.pausedSince.IsZero() {
		l.pausedTotal += time.Since(l.pausedSince)
	}
	lr := l.agg.result(l.lastTarget, l.rate)
	if l.rate > 0 {
		lr.MaxConcurrency = l.cfg.MaxInFlight // vLLM's max_concurrency: the open loop's cap
	}
	if l.rate > 0 {
		lr.Concurrency = 0
	}
	lr.MedianTTFBms = float64(l.ttfb.ValueAtQuantile(50)) / 1e3
	lr.MedianTTFATms = float64(l.ttfat.ValueAtQuantile(50)) / 1e3
	lr.ClientCPUs = cpu.Seconds()
	l.throughput(&lr)
	if lr.DurationS > 0 {
		lr.TotalTokenThroughput = lr.OutputThroughput + float64(lr.TotalInputTokens)/lr.DurationS
	}
	if g := l.cfg.GPU; g != nil && lr.DurationS > 0 && !l.measuredStart.IsZero() {
		from := l.measuredStart
		lr.GPU = g.Level(from, from.Add(time.Duration(lr.DurationS*float64(time.Second))), lr.OutputThroughput*lr.DurationS)
	}
	if l.cfg.slo != nil {
		l.cfg.slo.goodput(&lr, l.agg.sloc)
	}
	if l.pausedTotal > 0 {
		note, steered := phases.Paused(l.pausedTotal.Seconds())
		l.notes, l.steered = append(l.notes, note), append(l.steered, steered)
	}
	lr.Steered = l.steered
	if l.series.Len() > 0 {
		l.series.Concurrency, l.series.Rate = lr.Concurrency, l.rate
		l.r.em.Emit(ctx, phases.KindMacroSeries, &l.series)
	}
	if _, stopping, _ := l.r.s.state(); stopping {
		l.notes = append(l.notes, "stopped early by the operator")
	}
	if l.cancelled != nil {
		l.notes = append(l.notes, "cancelled: in-flight requests were cut and are not counted")
	}
	if l.raisedFrom > 0 {
		l.notes = append([]string{l.raisedNote(lr.Completed + lr.Failed)}, l.notes...)
	}
	lw := l.loadWarnings(&lr)
	lr.FewRequests = lr.Completed < phases.MinRequests
	lr.Notes = l.notes
	r := l.r
	lr.InputTokenSource = inputSource(l.agg.obs, lr.Completed, r.promptCal)
	r.warns.addLevel(&lr, append(append(levelWarnings(l.agg.obs, lr.Completed, l.cfg, r.promptCal, r.c.continuous.Load()),
		refusedWarning(lr.FailureExamples)...), lw...))
	if w := bunchWarning(r.path, lr.EventsPerRead); w != nil {
		r.warns.addLevel(&lr, []warning{*w})
	}
	if lr.Completed > 0 {
		// A level with nothing completed has no figure to judge the
		// client by (every request failing fast is not a client limit).
		// Thinking users hold no request; a level cut short by Ctrl-C held
		// fewer as its requests were cancelled.
		r.audit(&lr, l.rate, time.Since(l.start), l.steady && l.users == nil && l.cancelled == nil)
	}
	l.win.closed(r, l.ts.total.Load) // open loop, or a level cut short
	lr.Server = r.serverLevel(ctx, &l.win)
	lr.PrefillWait = l.agg.prefillWait()
	if l.users != nil {
		lr.Sessions = l.users.result(l.lastTarget, l.cfg)
	}
	if w := l.win.compare(ctx, lr.Server, lr.TokenSource); w != nil {
		r.warns.addLevel(&lr, []warning{*w})
	}
	return &lr
}

// throughput sets the level's throughput window, throughputs and mean in
// flight.
func (l *level) throughput(lr *phases.LevelResult) {
	lr.ThroughputWindow = "measured"
	area := l.inflightArea
	if l.rate == 0 && !l.winEnd.IsZero() && l.winEnd.After(l.measuredStart) {
		// Closed loop: throughput while C were in flight (every token
		// received in that window, warm-up requests' included, as they
		// held slots too).
		w := l.winEnd.Sub(l.measuredStart).Seconds()
		lr.ThroughputWindow = "in_flight"
		lr.DurationS = w
		lr.OutputThroughput = float64(l.tokEnd-l.tok0) / w
		// Completions come in bursts when requests run in step, so the
		// request rate is the token rate over the mean output length.
		lr.RequestThroughput = 0
		if lr.TotalOutputTokens > 0 {
			lr.RequestThroughput = lr.OutputThroughput * float64(lr.Completed) / float64(lr.TotalOutputTokens)
		}
		area = l.winArea
	}
	if lr.DurationS > 0 {
		lr.MeanInFlight = area / lr.DurationS
	}
}

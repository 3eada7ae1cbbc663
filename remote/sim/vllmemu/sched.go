package vllmemu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinWindow is how long before a step's end the scheduler stops sleeping
// and waits actively: Go's timers fire up to about a millisecond late.
const spinWindow = 1200 * time.Microsecond

// maxCatchUp is how far behind its schedule the engine may fall and still
// catch up; past it the schedule restarts from now.
const maxCatchUp = 250 * time.Millisecond

// emuReq is one completion request inside the scheduler.
type emuReq struct {
	prompt    int // prompt tokens
	cached    int // of them, those the prefix cache held: not computed at the first prefill
	maxTokens int
	gone      atomic.Bool // the handler left (client gone, fault injected)

	// What the scheduler has for the handler and the handler has not yet
	// taken. The scheduler never blocks on a slow handler: tokens pile up
	// here and go out in one chunk, as a server's output does when its
	// client reads slowly.
	mu       sync.Mutex
	pending  emuEvent
	notify   chan struct{} // capacity 1: "pending has something"
	admitted bool

	generated int
	prefilled bool
	arrived   time.Time
	firstTok  time.Time
	lastTok   time.Time

	resetAll bool // a control message: cut everything (server not ready)
}

// emuEvent is what the scheduler tells a request's handler.
type emuEvent struct {
	admitted bool // the request was scheduled (its prefill started)
	tokens   int  // tokens produced since the last event
	abort    bool // the server went away
}

func newEmuReq(prompt, maxTokens int, arrived time.Time) *emuReq {
	return &emuReq{prompt: prompt, maxTokens: maxTokens, notify: make(chan struct{}, 1), arrived: arrived}
}

// post adds to what the handler will take next, without blocking.
func (r *emuReq) post(ev emuEvent) {
	r.mu.Lock()
	r.pending.admitted = r.pending.admitted || ev.admitted
	r.pending.abort = r.pending.abort || ev.abort
	r.pending.tokens += ev.tokens
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// take returns and clears what is pending.
func (r *emuReq) take() emuEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.pending
	r.pending = emuEvent{}
	return ev
}

// submit hands r to the scheduler; false when the emulator is closed.
func (e *Emulator) submit(r *emuReq) bool {
	select {
	case e.arrive <- r:
		return true
	case <-e.done:
		return false
	}
}

// scheduler is the engine loop's state: the queues and the clock.
type scheduler struct {
	e                *Emulator
	waiting, running []*emuReq
	timer            *time.Timer
	stepStart        time.Time     // when the step under way began
	spin             time.Duration // how long before a step's end to wait actively
}

// schedule is the engine loop: admit, run one step, emit its tokens, repeat.
// Steps are timed against absolute deadlines, so a late wake-up shortens
// the next wait instead of stretching every later step.
func (e *Emulator) schedule() {
	defer close(e.done)
	s := &scheduler{e: e, timer: time.NewTimer(time.Hour), spin: spinWindow}
	s.timer.Stop()
	if e.cfg.CoarseTiming {
		s.spin = 0
	}
	for {
		if len(s.running) == 0 && len(s.waiting) == 0 {
			if !s.idle() {
				return
			}
			continue
		}
		s.drain()
		s.running = dropGone(s.running)
		s.waiting = dropGone(s.waiting)
		kv, prefill, newPrompt := s.admit()
		e.publish(s.running, s.waiting, kv)
		if len(s.running) == 0 {
			continue
		}
		stepEnd := s.stepStart.Add(s.stepTime(prefill))
		if !s.await(stepEnd) {
			return
		}
		if len(s.running) == 0 {
			continue // reset while stepping
		}
		// Go's timers wake up to a millisecond late; the last stretch of the
		// step is waited out precisely.
		for s.spin > 0 && time.Now().Before(stepEnd) {
			runtime.Gosched()
		}
		now := time.Now()
		s.running, kv = e.step(s.running, now, kv, newPrompt)
		kv = s.preempt(kv)
		e.publish(s.running, s.waiting, kv)
		// The next step starts where this one was due to end, so a late
		// wake-up (a busy machine) is made up by the next steps and every
		// request's TPOT stays exact; only a long stall resets the clock.
		s.stepStart = stepEnd
		if now.Sub(stepEnd) > maxCatchUp {
			s.stepStart = now
		}
	}
}

// abortAll cuts every request, running or waiting.
func (s *scheduler) abortAll() {
	for _, r := range s.running {
		r.post(emuEvent{abort: true})
	}
	for _, r := range s.waiting {
		r.post(emuEvent{abort: true})
	}
	s.running, s.waiting = s.running[:0], s.waiting[:0]
	s.e.publish(s.running, s.waiting, 0)
}

// accept queues an arriving request, or carries out a control message.
func (s *scheduler) accept(r *emuReq) {
	if r.resetAll {
		s.abortAll()
		return
	}
	s.waiting = append(s.waiting, r)
}

// idle waits for a request while the engine has none; false when the
// emulator closes.
func (s *scheduler) idle() bool {
	select {
	case r := <-s.e.arrive:
		s.accept(r)
		// An idle engine starts at once: the step counts from when
		// the request reached the server.
		s.stepStart = r.arrived
		if now := time.Now(); r.resetAll || s.stepStart.After(now) {
			s.stepStart = now
		}
		return true
	case <-s.e.quit:
		return false
	}
}

// drain accepts every request that has arrived, without waiting.
func (s *scheduler) drain() {
	for {
		select {
		case r := <-s.e.arrive:
			s.accept(r)
		default:
			return
		}
	}
}

// admit moves waiting requests, oldest first, to running while seats and KV
// cache last. It returns the KV cache in use, the prompt tokens the step
// computes and those of requests admitted for the first time.
func (s *scheduler) admit() (kv, prefill int, newPrompt int64) {
	cfg := s.e.sched()
	for _, r := range s.running {
		kv += r.prompt + r.generated
	}
	for len(s.waiting) > 0 && len(s.running) < cfg.MaxNumSeqs {
		r := s.waiting[0]
		need := r.prompt + r.generated
		if kv+need > cfg.KVCacheTokens && len(s.running) > 0 {
			break
		}
		if cfg.MaxBatchedTokens > 0 && prefill > 0 && prefill+need > cfg.MaxBatchedTokens {
			break
		}
		s.waiting = s.waiting[1:]
		s.running = append(s.running, r)
		kv += need
		if r.admitted {
			prefill += need
		} else {
			prefill += need - min(r.cached, need-1) // at least one token is computed, as vLLM does on a full hit
			r.admitted = true
			newPrompt += int64(r.prompt)
			r.post(emuEvent{admitted: true})
		}
	}
	return kv, prefill, newPrompt
}

// stepTime is how long the next step takes with the running batch and
// prefill prompt tokens.
func (s *scheduler) stepTime(prefill int) time.Duration {
	cfg := s.e.sched()
	n := len(s.running)
	dur := cfg.StepTime + time.Duration(n-1)*cfg.StepPerSeq + time.Duration(prefill)*cfg.PrefillPerToken
	if cfg.StepFunc != nil {
		dur = cfg.StepFunc(n, prefill)
	}
	if cfg.Jitter > 0 {
		dur = time.Duration(float64(dur) * (1 + cfg.Jitter*(2*s.e.roll()-1)))
	}
	return dur
}

// await sleeps until just before stepEnd, accepting requests as they
// arrive; a reset ends the wait early. False when the emulator closes.
func (s *scheduler) await(stepEnd time.Time) bool {
	s.timer.Reset(time.Until(stepEnd) - s.spin)
	for {
		select {
		case <-s.timer.C:
			return true
		case r := <-s.e.arrive:
			s.accept(r)
			if r.resetAll {
				s.timer.Stop()
				return true
			}
		case <-s.e.quit:
			s.timer.Stop()
			s.abortAll()
			return false
		}
	}
}

// preempt sends the newest requests back to the waiting queue while the
// KV cache overflows (vLLM V1 recomputes them later); it returns the KV
// cache then in use.
func (s *scheduler) preempt(kv int) int {
	for kv > s.e.cfg.KVCacheTokens && len(s.running) > 1 {
		r := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		kv -= r.prompt + r.generated
		r.prefilled = false
		s.waiting = append([]*emuReq{r}, s.waiting...)
		s.e.mu.Lock()
		s.e.st.state.Preemptions++
		s.e.mu.Unlock()
	}
	return kv
}

func dropGone(rs []*emuReq) []*emuReq {
	out := rs[:0]
	for _, r := range rs {
		if !r.gone.Load() {
			out = append(out, r)
		}
	}
	for i := len(out); i < len(rs); i++ {
		rs[i] = nil
	}
	return out
}

// step emits one step's tokens to every running request and retires the
// finished ones; newPrompt is the prompt tokens of requests admitted for
// the first time (counted when the step
// ends, with its iteration tokens, as vLLM records both from the step's
// outputs). It returns the requests still running and their KV use.
func (e *Emulator) step(running []*emuReq, now time.Time, kv int, newPrompt int64) ([]*emuReq, int) {
	cfg := e.sched()
	var gen, drafts, draftTok, accepted int64
	finished, itl := e.stepDone[:0], e.stepITL[:0]
	out := running[:0]
	for _, r := range running {
		k := 1
		if r.prefilled && cfg.TokensPerStep > 1 {
			drafts++
			draftTok += int64(cfg.TokensPerStep - 1)
			a := cfg.TokensPerStep - 1
			if cfg.SpecAcceptRate > 0 {
				a = 0
				for a < cfg.TokensPerStep-1 && e.roll() < cfg.SpecAcceptRate {
					a++
				}
			}
			accepted += int64(a)
			k += a
		}
		if left := r.maxTokens - r.generated; k > left {
			k = left
		}
		if r.prefilled {
			itl = append(itl, now.Sub(r.lastTok).Seconds())
		} else if r.firstTok.IsZero() {
			r.firstTok = now
		}
		r.prefilled = true
		r.generated += k
		r.lastTok = now
		kv += k
		gen += int64(k)
		if !r.gone.Load() {
			r.post(emuEvent{tokens: k})
		}
		if r.generated >= r.maxTokens {
			finished = append(finished, r)
			kv -= r.prompt + r.generated
			continue
		}
		out = append(out, r)
	}
	for i := len(out); i < len(running); i++ {
		running[i] = nil
	}
	e.mu.Lock()
	s := &e.st
	s.state.Steps++
	s.state.GenerationTokens += gen
	s.specDrafts += drafts
	s.specDraftTokens += draftTok
	s.specAccepted += accepted
	for _, v := range itl {
		s.itl.observe(v)
	}
	// As vLLM counts a step's tokens (IterationStats): the whole prompt of
	// each request whose prefill ended in it, cached tokens included, and
	// every token it generated, first tokens included.
	s.iterTokens.observe(float64(newPrompt + gen))
	s.state.PromptTokens += newPrompt
	for _, r := range finished {
		s.ttft.observe(r.firstTok.Sub(r.arrived).Seconds())
		s.e2e.observe(r.lastTok.Sub(r.arrived).Seconds())
		if r.generated > 1 {
			v := r.lastTok.Sub(r.firstTok).Seconds() / float64(r.generated-1)
			s.tpot.observe(v)
			s.state.TPOTSumSeconds += v
			s.state.TPOTRequests++
		}
	}
	e.mu.Unlock()
	clear(finished) // the scratch must not keep finished requests
	e.stepDone, e.stepITL = finished[:0], itl[:0]
	return out, kv
}

// publish updates the gauges.
func (e *Emulator) publish(running, waiting []*emuReq, kv int) {
	e.mu.Lock()
	e.st.state.Running = len(running)
	e.st.state.Waiting = len(waiting)
	e.st.state.KVCacheUsage = float64(kv) / float64(e.cfg.KVCacheTokens)
	if e.st.state.KVCacheUsage > 1 {
		e.st.state.KVCacheUsage = 1
	}
	e.mu.Unlock()
}

package fleet

import (
	"cmp"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// ticker emits a level's MacroTick once a second, merged over the agents
// from what their sinks received since the last tick.
type ticker struct {
	em    *phases.Emitter
	conc  int
	reqs  int
	dur   time.Duration
	st    *steering
	every time.Duration
	// server is 1 + the agent whose /metrics scrapes the ticks pass on
	// (0: none yet): the server is one, and one agent's view of it is
	// enough. It is the first agent in order that sends one, as the merged
	// level's server figures are (serverOf).
	server atomic.Int32
}

// agentEvents is an emitter for agent i's own events while its share
// runs, and the func that ends it: the agent's ticks give its requests in
// flight (the level's tick sums them) and its /metrics scrapes, the
// server's running and waiting requests, are passed on from one agent.
func (t *ticker) agentEvents(ctx context.Context, i int, s *sink) (*phases.Emitter, func()) {
	if t == nil || t.em == nil {
		return nil, func() {}
	}
	ch := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range ch {
			switch d := ev.Data.(type) {
			case phases.MacroTick:
				s.ticked(d)
			case phases.ServerStats:
				if t.serverFrom(i) {
					t.em.Emit(ctx, phases.KindMacroServer, &d)
				}
			}
		}
	})
	return &phases.Emitter{Out: ch}, func() { close(ch); wg.Wait() }
}

// serverFrom says whether agent i's /metrics scrape is passed on: it is
// when no agent before i in order has sent one (agent i then stands for
// the server until one before it sends).
func (t *ticker) serverFrom(i int) bool {
	for {
		cur := t.server.Load()
		if cur != 0 && cur < int32(i+1) {
			return false
		}
		if cur == int32(i+1) || t.server.CompareAndSwap(cur, int32(i+1)) {
			return true
		}
	}
}

// tickState is what the ticks have taken from each sink so far.
type tickState struct {
	seen        []int   // seconds taken, per sink
	toks        []int64 // output tokens taken, per sink
	last, start time.Time
	every       time.Duration
}

// run emits a tick every t.every until stop closes, and one last one then.
func (t *ticker) run(ctx context.Context, sinks []*sink, stop <-chan struct{}) {
	if t == nil || t.em == nil {
		return
	}
	n := len(sinks)
	now := time.Now()
	s := &tickState{seen: make([]int, n), toks: make([]int64, n), last: now, start: now, every: cmp.Or(t.every, time.Second)}
	tk := time.NewTicker(s.every)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			t.emit(ctx, sinks, s)
			return
		case <-ctx.Done():
			return
		case <-tk.C:
			t.emit(ctx, sinks, s)
		}
	}
}

// emit takes what each sink received since the last tick and emits it as
// one tick: its seconds' percentiles and tokens, and the requests completed
// and failed over the level so far, as a single client's tick counts them.
func (t *ticker) emit(ctx context.Context, sinks []*sink, s *tickState) {
	tpot, ttft := hdrsec.NewMerged(), hdrsec.NewMerged()
	var ok, failed, toks int64
	inFlight := 0
	for i, sk := range sinks {
		sk.mu.Lock()
		inFlight += sk.inFlight
		for _, sec := range sk.seconds[s.seen[i]:] {
			switch sec.Metric {
			case hdrsec.TPOT:
				_ = tpot.Add(sec) // a second that does not decode is left out of the tick
			case hdrsec.TTFT:
				_ = ttft.Add(sec)
			}
		}
		s.seen[i] = len(sk.seconds)
		ok, failed, toks = ok+sk.b.OK, failed+sk.b.Failed, toks+sk.b.Tokens-s.toks[i]
		s.toks[i] = sk.b.Tokens
		sk.mu.Unlock()
	}
	now := time.Now()
	// The agents send their tokens once a second, out of step with the
	// ticks: over less than a tick's period (the level's last tick, just
	// after a regular one) a batch would read as a burst.
	dt := max(now.Sub(s.last), s.every).Seconds()
	s.last = now
	tk := phases.MacroTick{Concurrency: t.conc, InFlight: inFlight, Completed: int(ok), Failed: int(failed), LevelElapsedS: now.Sub(s.start).Seconds()}
	tk.OutputTokS = float64(toks) / dt
	tk.TPOTp50ms, tk.TPOTp99ms, tk.TTFTp50ms = quantileMS(tpot, 0.5), quantileMS(tpot, 0.99), quantileMS(ttft, 0.5)
	switch {
	case t.dur > 0:
		tk.LevelProgress = math.Min(1, tk.LevelElapsedS/t.dur.Seconds())
	case t.reqs > 0:
		tk.LevelProgress = math.Min(1, float64(ok)/float64(t.reqs))
	}
	if t.st != nil {
		tk.Paused, _ = t.st.state()
		if c := t.st.concurrency(); c > 0 {
			tk.Concurrency = c
		}
	}
	t.em.Emit(ctx, phases.KindMacroTick, &tk)
}

// quantileMS is m's q-quantile in milliseconds, 0 when m is empty.
func quantileMS(m *hdrsec.Merged, q float64) float64 {
	if m.Count() == 0 {
		return 0
	}
	return float64(m.Quantile(q)) / 1e3
}

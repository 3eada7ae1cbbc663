package macro

import (
	"context"
	"sort"
	"sync"
	"time"
)

// ReplayStats is how a replay kept to the trace's schedule: the rates
// (as the open loop reports them) and the scheduling delay of the sends.
type ReplayStats struct {
	Requests      int     `json:"requests"`
	ScheduledRate float64 `json:"scheduled_rate"`
	AchievedRate  float64 `json:"achieved_rate"`
	P50DelayMs    float64 `json:"p50_delay_ms"`
	P99DelayMs    float64 `json:"p99_delay_ms"`
	MaxDelayMs    float64 `json:"max_delay_ms"`
}

// replayTrace sends each request at its time from now (reqs sorted by
// At): send runs in its own goroutine with the request's index and its
// intended time, and replayTrace waits for all of them. A cancelled
// context stops the sends not yet made.
func replayTrace(ctx context.Context, reqs []TraceRequest, send func(i int, intended time.Time)) ReplayStats {
	start := time.Now()
	var sc schedule
	delays := make([]float64, 0, len(reqs))
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i, r := range reqs {
		intended := start.Add(r.At)
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				wg.Wait()
				return replayStats(sc, delays)
			case <-timer.C:
			}
		}
		now := time.Now()
		sc.add(intended.Sub(start).Seconds(), now.Sub(start).Seconds())
		delays = append(delays, max(ms(now.Sub(intended)), 0))
		wg.Add(1)
		go func() { defer wg.Done(); send(i, intended) }()
	}
	wg.Wait()
	return replayStats(sc, delays)
}

func replayStats(sc schedule, delays []float64) ReplayStats {
	st := ReplayStats{Requests: sc.n}
	st.ScheduledRate, st.AchievedRate = sc.rates()
	if len(delays) > 0 {
		sort.Float64s(delays)
		q := func(p float64) float64 { return delays[min(int(p*float64(len(delays))), len(delays)-1)] }
		st.P50DelayMs, st.P99DelayMs, st.MaxDelayMs = q(0.5), q(0.99), delays[len(delays)-1]
	}
	return st
}

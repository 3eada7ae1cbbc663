package macro_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// A deliberately slow client (every send holds the dispatcher 25 ms) cannot
// keep 100 requests/s: each open-loop level records every request's
// intended and actual send, reports the scheduling delay and the achieved
// against the requested rate, and warns that the client fell behind; with
// --latency-from intended the wait is in TTFT and E2EL. The same client at
// full speed keeps the rate.
func TestOpenLoopSlowClientFallsBehind(t *testing.T) {
	ls := &limitServer{d0: time.Millisecond, a: time.Millisecond}
	url := ls.start(t)
	cfg := macro.Config{URL: url, Model: "test/model", Rate: 100, Arrivals: macro.ArrivalsConstant, Requests: 40,
		InputLen: 8, OutputLen: 4, NoPreflight: true, Seed: 1}

	fast := runSweep(t, cfg).Levels[0]
	if fast.Schedule == nil || math.Abs(fast.Schedule.ScheduledRate-100) > 1 || fast.Schedule.AchievedRate < 95 {
		t.Fatalf("at full speed: schedule %+v", fast.Schedule)
	}

	macro.SetDispatchDelay(25 * time.Millisecond)
	defer macro.SetDispatchDelay(0)
	for _, from := range []string{macro.LatencySent, macro.LatencyIntended} {
		c := cfg
		c.LatencyFrom = from
		res := runSweep(t, c)
		l := res.Levels[0]
		sc := l.Schedule
		t.Logf("%s: %+v; median TTFT %.1f ms, E2EL %.1f ms", from, *sc, l.MedianTTFTms, l.MedianE2ELms)
		if !sc.FellBehind || sc.AchievedRate > 45 || sc.RequestedRate != 100 || sc.P99DelayMs < 100 || sc.P50DelayMs <= 0 {
			t.Fatalf("%s: schedule %+v", from, *sc)
		}
		if res.LatencyFrom != from || sc.LatencyFrom != from {
			t.Errorf("latency_from %q / %q, want %q", res.LatencyFrom, sc.LatencyFrom, from)
		}
		w := strings.Join(res.Warnings, "\n")
		if !strings.Contains(w, "fell behind its schedule") || !strings.Contains(w, "100 req/s:") || !strings.Contains(w, "of the 100 scheduled") {
			t.Errorf("%s: warnings %q", from, res.Warnings)
		}
		// The p50 delay of requests spaced 10 ms apart but sent 25 ms apart
		// grows along the level; from the intended time TTFT holds it.
		switch from {
		case macro.LatencySent:
			if l.MedianTTFTms > 50 {
				t.Errorf("TTFT from the send %.1f ms holds the client's wait", l.MedianTTFTms)
			}
		case macro.LatencyIntended:
			if l.MedianTTFTms < 0.8*sc.P50DelayMs || l.MedianE2ELms < l.MedianTTFTms {
				t.Errorf("TTFT from the intended time %.1f ms does not hold the p50 delay %.1f ms", l.MedianTTFTms, sc.P50DelayMs)
			}
		}
	}
}

// Poisson, gamma and constant arrivals keep the rate asked for; a
// burstiness under 1 spreads the gaps more (their squared coefficient of
// variation is 1/burstiness, as vLLM's gamma arrivals).
func TestArrivalGaps(t *testing.T) {
	for _, c := range []struct {
		arrivals string
		b, cv2   float64
	}{{macro.ArrivalsPoisson, 1, 1}, {macro.ArrivalsPoisson, 0.25, 4}, {macro.ArrivalsPoisson, 4, 0.25}, {macro.ArrivalsConstant, 0, 0}} {
		gaps := macro.Gaps(macro.Config{Arrivals: c.arrivals, Burstiness: c.b, Seed: 7}, 50, 200000)
		var sum, sq float64
		for _, g := range gaps {
			sum += g.Seconds()
		}
		mean := sum / float64(len(gaps))
		for _, g := range gaps {
			sq += (g.Seconds() - mean) * (g.Seconds() - mean)
		}
		cv2 := sq / float64(len(gaps)) / (mean * mean)
		if math.Abs(1/mean-50) > 1 || math.Abs(cv2-c.cv2) > 0.05*c.cv2+0.01 {
			t.Errorf("%s b=%g: rate %.2f (want 50), CV² %.3f (want %g)", c.arrivals, c.b, 1/mean, cv2, c.cv2)
		}
	}
}

// A timed open loop whose dispatcher falls behind (every send holds it
// 25 ms, the schedule's gaps are 10 ms) still sends every request its
// schedule holds within the window, the late ones with their send lag,
// and says the client fell behind: a late dispatcher does not read as a
// lower rate.
func TestOpenLoopWindowSendsItsSchedule(t *testing.T) {
	ls := &limitServer{d0: time.Millisecond, a: time.Millisecond}
	url := ls.start(t)
	cfg := macro.Config{URL: url, Model: "test/model", Rate: 100, Arrivals: macro.ArrivalsConstant, Duration: 500 * time.Millisecond,
		InputLen: 8, OutputLen: 4, NoPreflight: true, Seed: 1}
	macro.SetDispatchDelay(25 * time.Millisecond)
	defer macro.SetDispatchDelay(0)
	res := runSweep(t, cfg)
	l := res.Levels[0]
	if l.Completed != 50 || l.Schedule == nil || !l.Schedule.FellBehind || l.Schedule.P99DelayMs < 300 {
		t.Fatalf("completed %d of the schedule's 50; schedule %+v", l.Completed, l.Schedule)
	}
}

package macro_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// runSearch runs cfg and returns its result and the search events it sent.
func runSearch(t *testing.T, cfg macro.Config) (*macro.Result, []phases.Search) {
	t.Helper()
	s, err := macro.NewSweep(macro.Complete(cfg))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan phases.Event, 1024)
	var got []phases.Search
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if d, ok := ev.Data.(phases.Search); ok {
				got = append(got, d)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.Run(ctx, &phases.Emitter{Out: events})
	close(events)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.Search == nil {
		t.Fatal("no search in the result")
	}
	for _, st := range res.Search.Steps {
		t.Logf("%s %g: met=%v share=%.2f [%.2f, %.2f] runs=%d why=%s", st.Phase, st.Value, st.Met, st.Share, st.ShareLow, st.ShareHigh, st.Runs, st.Why)
	}
	t.Log(res.Search.Text)
	return res, got
}

// holds checks that the search's interval holds the true limit.
func holds(t *testing.T, s *phases.Search, truth float64) {
	t.Helper()
	if s.Upper == nil || s.Lower > truth || truth >= *s.Upper || s.Answer != s.Lower {
		t.Fatalf("the search's interval %s (answer %g) does not hold the true limit %g", s.Interval(), s.Answer, truth)
	}
}

// The closed-loop search against a server whose TPOT is a + b·C finds the
// largest C meeting a TPOT SLO inside its interval, climbing the ladder
// and bisecting, and says so in the result document and its events.
func TestSearchConcurrencyHoldsTrueLimit(t *testing.T) {
	ls := &limitServer{d0: 2 * time.Millisecond, a: 2 * time.Millisecond, b: 4 * time.Millisecond}
	url := ls.start(t)
	const bound = 24 * time.Millisecond
	truth := 0
	for c := 1; ls.tpotClosed(c) <= bound; c++ {
		truth = c
	}
	res, events := runSearch(t, macro.Config{URL: url, Model: "test/model", Concurrency: []int{4, 8, 16},
		Requests: 40, InputLen: 8, OutputLen: 16, NoPreflight: true, Seed: 1, SLO: "tpot=24ms", Search: phases.SearchConcurrency})
	s := res.Search
	holds(t, s, float64(truth))
	if s.Mode != "concurrency" || s.Unit != "concurrency" || s.StoppedBecause != phases.StopSLO || !s.Done {
		t.Errorf("search = %+v", s)
	}
	if s.Runs < len(s.Steps) || len(res.Levels) != len(s.Steps) {
		t.Errorf("%d runs, %d steps, %d levels", s.Runs, len(s.Steps), len(res.Levels))
	}
	var bisect int
	for _, st := range s.Steps {
		if st.Phase == "bisect" {
			bisect++
		}
	}
	if bisect == 0 || s.Steps[len(s.Steps)-1].Phase != "bisect" {
		t.Errorf("no bisection: %+v", s.Steps)
	}
	if len(events) < len(s.Steps) || !events[len(events)-1].Done || events[0].Done {
		t.Errorf("%d search events for %d steps", len(events), len(s.Steps))
	}
	if res.SLO == nil || res.SLO.MaxConcurrency != truth || res.SLO.Text != s.Text {
		t.Errorf("slo = %+v", res.SLO)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"search":{`, `"answer":`, `"lower":`, `"upper":`, `"unit":"concurrency"`, `"runs":`, `"stopped_because":"slo"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("the result document lacks %s", k)
		}
	}
}

// The open-loop search against the same kind of server, at constant
// arrivals, finds the largest rate meeting the TPOT SLO inside its
// interval: TPOT = (a + bλd0)/(1 − bλ(out−1)), so λ* = (S − a)/(b(d0 + (out−1)S)).
func TestSearchRateHoldsTrueLimit(t *testing.T) {
	ls := &limitServer{d0: 10 * time.Millisecond, a: 4 * time.Millisecond, b: 2 * time.Millisecond}
	url := ls.start(t)
	const out = 16
	S := 20500 * time.Microsecond
	truth := (S - ls.a).Seconds() / (ls.b.Seconds() * (ls.d0 + (out-1)*S).Seconds())
	res, _ := runSearch(t, macro.Config{URL: url, Model: "test/model", Rate: 16, Arrivals: macro.ArrivalsConstant,
		Requests: 40, InputLen: 8, OutputLen: out, NoPreflight: true, Seed: 1, SLO: "tpot=20.5ms",
		Search: phases.SearchRate, SearchTolerance: 0.2})
	s := res.Search
	t.Logf("true limit %.2f req/s", truth)
	holds(t, s, truth)
	// Past the rate where TPOT has no bound (1/(b(out−1))) the level may
	// also be over-saturated.
	if s.Unit != "req/s" || (s.StoppedBecause != phases.StopSLO && s.StoppedBecause != phases.StopSaturation) {
		t.Errorf("search = %+v", s)
	}
	for _, l := range res.Levels {
		if l.Rate == 0 || l.Schedule == nil || l.Schedule.Arrivals != macro.ArrivalsConstant {
			t.Fatalf("level %+v is not an open-loop level with its schedule", l)
		}
		t.Logf("%g req/s: median TPOT %.2f ms (model %.2f), sent %.1f req/s", l.Rate, l.MedianTPOTms,
			float64(ls.tpotOpen(l.Rate, out))/1e6, l.Schedule.AchievedRate)
	}
}

// A server that runs two requests at once and queues the rest cannot keep
// up past 2/E2E requests/s: there TTFT and the queue grow with time, the
// level is over-saturated (whatever its TPOT), and the climb stops; the
// interval holds the server's capacity.
func TestSearchStopsAtOverSaturation(t *testing.T) {
	ls := &limitServer{d0: 20 * time.Millisecond, a: 18 * time.Millisecond, maxRunning: 8}
	url := ls.start(t)
	const out = 16
	capacity := 8 / (ls.d0 + (out-1)*ls.a).Seconds()
	res, _ := runSearch(t, macro.Config{URL: url, Model: "test/model", Rate: 20, Arrivals: macro.ArrivalsConstant,
		Requests: 80, InputLen: 8, OutputLen: out, NoPreflight: true, Seed: 1, SLO: "tpot=100ms",
		Search: phases.SearchRate, SearchTolerance: 0.3})
	s := res.Search
	t.Logf("capacity %.2f req/s", capacity)
	if s.StoppedBecause != phases.StopSaturation {
		t.Fatalf("stopped because %q, want over_saturation", s.StoppedBecause)
	}
	holds(t, s, capacity)
	saturated := 0
	for _, l := range res.Levels {
		if l.OverSaturated != (l.Rate > capacity) {
			t.Errorf("%g req/s: over_saturated=%v (%s), capacity %.1f", l.Rate, l.OverSaturated, l.Saturation, capacity)
		}
		if l.OverSaturated {
			saturated++
		}
	}
	if saturated == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "over-saturated") {
		t.Errorf("no over-saturation said: %q", res.Warnings)
	}
}

// A search without an SLO, or of an unknown kind, is refused before any
// request.
func TestSearchBadInput(t *testing.T) {
	for _, c := range []struct {
		cfg  macro.Config
		want string
	}{
		{macro.Config{URL: "http://127.0.0.1:1", Search: "rate"}, "needs an SLO"},
		{macro.Config{URL: "http://127.0.0.1:1", Search: "latency", SLO: "tpot=50"}, `Search "latency"`},
		{macro.Config{URL: "http://127.0.0.1:1", Search: "rate", SLO: "tpot=50", SearchTolerance: 1}, "SearchTolerance 1"},
		{macro.Config{URL: "http://127.0.0.1:1", Rate: 1, Arrivals: "uniform"}, `Arrivals "uniform"`},
		{macro.Config{URL: "http://127.0.0.1:1", Rate: 1, Burstiness: -1}, "Burstiness -1"},
		{macro.Config{URL: "http://127.0.0.1:1", Rate: 1, Arrivals: "constant", Burstiness: 2}, "only with poisson"},
		{macro.Config{URL: "http://127.0.0.1:1", LatencyFrom: "start"}, `LatencyFrom "start"`},
	} {
		_, err := macro.NewSweep(macro.Complete(c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

package macro

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A queue that grows (TTFT and in flight rising with time) is
// over-saturated; the same figures flat with noise, or rising by less
// than the margin, are not; a fit needs its points.
func TestSaturationCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(ttftSlope, queueSlope float64, n int) string {
		var s saturation
		for i := range n {
			x := float64(i) * 0.05
			s.ttft.add(x, 200+ttftSlope*x+20*rng.NormFloat64())
			s.queue.add(x, 10+queueSlope*x+rng.NormFloat64())
		}
		return s.check()
	}
	if why := run(100, 5, 200); !strings.Contains(why, "over-saturated") {
		t.Errorf("a growing queue is not said: %q", why)
	}
	for _, c := range []struct {
		name    string
		ttft, q float64
		n       int
	}{{"flat", 0, 0, 200}, {"TTFT only", 100, 0, 200}, {"queue only", 0, 5, 200}, {"under the margin", 5, 0.2, 200}, {"too few points", 100, 5, 10}} {
		if why := run(c.ttft, c.q, c.n); why != "" {
			t.Errorf("%s: said over-saturated: %s", c.name, why)
		}
	}
}

// The fit's slope and interval match the textbook on a known line.
func TestFitSlope(t *testing.T) {
	var f fit
	for i := range 11 {
		f.add(float64(i), 3*float64(i)+1)
	}
	if b, h, ok := f.slope(); !ok || math.Abs(b-3) > 1e-9 || h > 1e-6 {
		t.Errorf("slope %g ± %g (%v), want exactly 3", b, h, ok)
	}
}

// The Wilson interval: 40 of 40 settles a 90% share, 34 of 34 does not;
// the fewest requests that settle 90% are 35.
func TestWilson(t *testing.T) {
	if lo, hi := wilson(40, 40); lo < 0.9 || hi != 1 {
		t.Errorf("40/40: [%g, %g]", lo, hi)
	}
	if lo, _ := wilson(34, 34); lo >= 0.9 {
		t.Errorf("34/34: low %g", lo)
	}
	if n := minSettled(0.9); n != 35 {
		t.Errorf("minSettled(0.9) = %d", n)
	}
	if lo, hi := wilson(0, 50); lo != 0 || hi > 0.08 {
		t.Errorf("0/50: [%g, %g]", lo, hi)
	}
}

// FuzzOpenLoopValues: whatever burstiness and search tolerance are given,
// an accepted sweep has finite, positive ones, draws finite gaps and
// writes its parameters as JSON.
func FuzzOpenLoopValues(f *testing.F) {
	f.Add(1.0, 0.05, "poisson")
	f.Add(math.NaN(), math.Inf(1), "constant")
	f.Add(-1.0, 1.0, "")
	f.Add(1e-300, 1e-300, "poisson")
	f.Fuzz(func(t *testing.T, burst, tol float64, arrivals string) {
		cfg := Config{URL: "http://127.0.0.1:1", Rate: 10, Burstiness: burst, Arrivals: arrivals, SLO: "tpot=50",
			Search: "rate", SearchTolerance: tol, Seed: 1}
		c, err := Complete(cfg).prepared()
		if err != nil {
			return
		}
		if !(c.Burstiness >= MinBurstiness && c.Burstiness <= MaxBurstiness && c.SearchTolerance > 0 && c.SearchTolerance < 1) {
			t.Fatalf("accepted burstiness %g tolerance %g", c.Burstiness, c.SearchTolerance)
		}
		a := newArrivals(c, c.Rate, rand.NewPCG(1, 2))
		for range 100 {
			if g := a.next(); g < 0 {
				t.Fatalf("gap %s with burstiness %g", g, c.Burstiness)
			}
		}
		if _, err := json.Marshal((&Sweep{cfg: c}).params()); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzLevelTime: a rate, requests and duration accepted make a level that
// sends its requests within MaxLevelTime (or its duration), and expects at
// least one request.
func FuzzLevelTime(f *testing.F) {
	f.Add(1e-9, 100, int64(0), "")
	f.Add(1e-6, 100, int64(0), "rate")
	f.Add(0.01, 0, int64(time.Minute), "")
	f.Add(10.0, 100, int64(time.Minute), "")
	f.Fuzz(func(t *testing.T, rate float64, requests int, dur int64, search string) {
		cfg := Config{URL: "http://127.0.0.1:1", Rate: rate, Requests: requests, Duration: time.Duration(dur), SLO: "tpot=50", Search: search, Seed: 1}
		if requests == 0 && dur <= 0 {
			return
		}
		c, err := Complete(cfg).prepared()
		if err != nil || c.Rate <= 0 {
			return
		}
		r := c.Rate
		if c.Search == "rate" {
			r = c.SearchFrom
		}
		if n := c.Warmup + c.Requests; n > 0 && float64(n)/r > math.Max(MaxLevelTime.Seconds(), c.Duration.Seconds()) {
			t.Fatalf("accepted %d requests at %g req/s (%s)", n, r, c.Duration)
		}
		if c.Warmup+c.Requests == 0 && r*c.Duration.Seconds() < 1 {
			t.Fatalf("accepted %g req/s for %s", r, c.Duration)
		}
	})
}

// --rate 1e-9, --search rate from 1e-6 and --burstiness 1e-300 are
// refused before any request, each naming its field.
func TestOpenLoopBounds(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rate: 1e-9, Requests: 100}, "Rate 1e-09 req/s: a level's"},
		{Config{Rate: 1e-6, Requests: 100, Search: "rate", SLO: "tpot=50"}, "SearchFrom 1e-06 req/s"},
		{Config{Rate: 0.001, Duration: time.Minute}, "not even one"},
		{Config{Rate: 10, Requests: 100, Burstiness: 1e-300}, "Burstiness 1e-300: want 0.1 to 1000"},
	} {
		cfg := c.cfg
		cfg.URL = "http://127.0.0.1:1"
		byTime := cfg.Requests == 0
		cfg = Complete(cfg)
		if byTime {
			cfg.Requests, cfg.Warmup = 0, 0
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rate %g: %v, want %q", cfg.Rate, err, c.want)
		}
	}
}

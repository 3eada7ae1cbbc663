package macro

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
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
		if !(c.Burstiness > 0 && c.Burstiness <= MaxBurstiness && c.SearchTolerance > 0 && c.SearchTolerance < 1) {
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

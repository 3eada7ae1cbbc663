package macro

import (
	"math"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// TestGoodputKnownDistribution: ten requests with TTFT 100…1000 ms and
// TPOT 10…100 ms against ttft=500ms,tpot=70ms: the good ones are those
// within both (TTFT ≤ 500 and TPOT ≤ 70: the first five).
func TestGoodputKnownDistribution(t *testing.T) {
	s, err := ParseSLO("ttft=500ms,tpot:70,e2el=30s")
	if err != nil {
		t.Fatal(err)
	}
	var c sloCount
	for i := 1; i <= 10; i++ {
		r := &Record{OutputTokens: 100, ttft: time.Duration(i) * 100 * time.Millisecond, tpot: time.Duration(i) * 10 * time.Millisecond}
		r.e2el = r.ttft + 99*r.tpot
		if s.good(r) {
			c.good++
			c.goodTok += int64(r.OutputTokens)
		}
	}
	if c.good != 5 {
		t.Fatalf("%d good, want 5", c.good)
	}
	// Two failed requests count against the share, never as good.
	lr := phases.LevelResult{Completed: 10, Failed: 2, RequestThroughput: 4, OutputThroughput: 400, TotalOutputTokens: 1000}
	s.goodput(&lr, c)
	g := lr.Goodput
	if g.Good != 5 || math.Abs(g.Share-5.0/12) > 1e-9 || g.RequestGoodput != 2 || g.TokenGoodput != 200 || g.Met {
		t.Errorf("goodput %+v", g)
	}
	// A one-token answer has no TPOT: only its TTFT and E2EL count.
	if !s.good(&Record{OutputTokens: 1, ttft: time.Millisecond, e2el: time.Millisecond, tpot: time.Hour}) {
		t.Error("a one-token answer judged by TPOT")
	}
}

func TestParseSLO(t *testing.T) {
	s, err := ParseSLO("ttft=2s, tpot=50ms ,e2el=30s,share=95%")
	if err != nil || s.ttft != 2*time.Second || s.tpot != 50*time.Millisecond || s.e2el != 30*time.Second || s.share != 0.95 {
		t.Fatalf("%+v %v", s, err)
	}
	if got := s.String(); got != "ttft=2s,tpot=50ms,e2el=30s" {
		t.Errorf("String %q", got)
	}
	for _, bad := range []string{"", "ttft", "ttft=-1s", "ttft=abc", "latency=2s", "share=2", "tpot=0"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMeanCI95(t *testing.T) {
	m, h := MeanCI95([]float64{1, 2, 3})
	if m != 2 || math.Abs(h-4.303/math.Sqrt(3)) > 1e-9 {
		t.Errorf("mean %g ± %g", m, h)
	}
	if m, h := MeanCI95([]float64{5}); m != 5 || h != 0 {
		t.Errorf("one value: %g ± %g", m, h)
	}
}

// TestNoiseSaid: a plateau whose next level's interval reaches +10% is
// inside the noise; tight intervals are not.
func TestNoiseSaid(t *testing.T) {
	lv := func(c int, mean, ci float64) phases.LevelResult {
		return phases.LevelResult{Concurrency: c, OutputThroughput: mean,
			Repeats: &phases.Repeats{N: 3, CI95: map[string]float64{"output_throughput": ci}}}
	}
	p := &phases.Plateau{Concurrency: 8}
	if n := noise([]phases.LevelResult{lv(8, 1000, 80), lv(16, 1050, 60)}, p); n == "" {
		t.Error("a wide interval not said")
	}
	if n := noise([]phases.LevelResult{lv(8, 1000, 5), lv(16, 1020, 5)}, p); n != "" {
		t.Errorf("tight intervals said: %s", n)
	}
}

// The SLO's summary names the largest level meeting it in the level's own
// terms: a closed loop's C, an open loop's rate, a trace's replay speed
// (an open-loop level, which has no C, is not "no level").
func TestSLOSummaryOfOpenLoopAndTrace(t *testing.T) {
	s, err := ParseSLO("ttft=2s")
	if err != nil {
		t.Fatal(err)
	}
	met := func(ok bool) *phases.Goodput { return &phases.Goodput{Met: ok} }
	for _, c := range []struct {
		levels []phases.LevelResult
		want   string
	}{
		{[]phases.LevelResult{{Concurrency: 4, Goodput: met(true)}, {Concurrency: 8, Goodput: met(false)}}, "largest C meeting the SLO (ttft=2s for 90% of requests): 4"},
		{[]phases.LevelResult{{Rate: 2, Goodput: met(true)}, {Rate: 4.5, Goodput: met(true)}, {Rate: 9, Goodput: met(false)}},
			"largest rate meeting the SLO (ttft=2s for 90% of requests): 4.5 req/s"},
		{[]phases.LevelResult{{Rate: 7.054, Goodput: met(true), Schedule: &phases.Schedule{TraceSpeed: 2}},
			{Rate: 14.11, Goodput: met(false), Schedule: &phases.Schedule{TraceSpeed: 4}}},
			"largest replay speed meeting the SLO (ttft=2s for 90% of requests): 2×"},
		{[]phases.LevelResult{{Rate: 9, Goodput: met(false)}}, "no level met the SLO (ttft=2s for 90% of requests)"},
	} {
		if got := s.summary(c.levels); got.Text != c.want {
			t.Errorf("summary %q, want %q", got.Text, c.want)
		}
	}
}

package macro

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestParseSLORefusesOutsideValues: bounds that round to nothing (1e-9
// ms was taken as "no bound" and every level met an empty SLO), overflow
// (1e300), are not numbers (Inf, NaN), a NaN share, and a key given twice
// are refused, naming the value.
func TestParseSLORefusesOutsideValues(t *testing.T) {
	for spec, want := range map[string]string{
		"ttft=1e-9":          `ttft="1e-9": want a duration from 1µs to 24h0m0s`,
		"ttft=1e300":         `ttft="1e300"`,
		"ttft=Inf":           `ttft="Inf"`,
		"ttft=-Inf":          `ttft="-Inf"`,
		"tpot=NaN":           `tpot="NaN"`,
		"e2el=100000h":       `e2el="100000h"`,
		"e2el=0.5ns":         `e2el="0.5ns"`,
		"ttft=2s,share=NaN":  `share="NaN"`,
		"ttft=2s,share=NaN%": `share="NaN%"`,
		"ttft=1s,ttft=2s":    "ttft is given twice",
		"share=0.9":          "no bound",
	} {
		_, err := ParseSLO(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
	s, err := ParseSLO("ttft=0.001,e2el=24h")
	if err != nil || s.ttft != time.Microsecond || s.e2el != 24*time.Hour {
		t.Errorf("the bounds' ends: %+v %v", s, err)
	}
}

// FuzzParseSLO: no spec panics; an accepted one has a bound, every bound
// within its limits, a share in (0, 1], and reads back from its String
// with the same bounds.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft=2s,tpot=50ms,e2el=30s", "ttft=2s, tpot=50ms ,e2el=30s,share=95%", "tpot:70", "ttft=1e-9",
		"ttft=1e300", "ttft=Inf", "ttft=NaN", "share=NaN", "ttft=1s,share=0x1p-2", "e2el=-0", "ttft=1h1h", "TTFT=2S", "ttft=,", "=", ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSLO(spec)
		if err != nil {
			return
		}
		for _, d := range []time.Duration{s.ttft, s.tpot, s.e2el} {
			if d != 0 && (d < minSLOBound || d > maxSLOBound) {
				t.Fatalf("%q: bound %v", spec, d)
			}
		}
		if math.IsNaN(s.share) || s.share <= 0 || s.share > 1 {
			t.Fatalf("%q: share %g", spec, s.share)
		}
		back, err := ParseSLO(s.String())
		if s.String() == "" || err != nil || back.ttft != s.ttft || back.tpot != s.tpot || back.e2el != s.e2el {
			t.Fatalf("%q: %q reads back as %+v, %v", spec, s.String(), back, err)
		}
	})
}

// TestSweepRefusesOutsideValues: the values the audit found taken (and then
// lost: a NaN or infinite rate or range ratio made the result unwritable,
// a NaN ratio made every prompt one token, repeated levels broke the
// notebook's chart and compare, negative counts fell back to defaults, a
// negative timeout failed every request and blamed the server) are refused
// before the sweep starts, naming the field.
func TestSweepRefusesOutsideValues(t *testing.T) {
	base := Config{URL: "http://127.0.0.1:1", Concurrency: []int{1}}
	for want, mod := range map[string]func(*Config){
		"Rate NaN":                      func(c *Config) { c.Rate = math.NaN() },
		"Rate +Inf":                     func(c *Config) { c.Rate = math.Inf(1) },
		"Rate -1":                       func(c *Config) { c.Rate = -1 },
		"Rate 1e+09":                    func(c *Config) { c.Rate = 1e9 },
		"RangeRatio NaN":                func(c *Config) { c.RangeRatio = math.NaN() },
		"RangeRatio +Inf":               func(c *Config) { c.RangeRatio = math.Inf(1) },
		"RangeRatio 1: want":            func(c *Config) { c.RangeRatio = 1 },
		"Concurrency: 1 is given twice": func(c *Config) { c.Concurrency = []int{1, 1} },
		"Concurrency: 0 is less than 1": func(c *Config) { c.Concurrency = []int{0} },
		"Concurrency: 100000000 is more than 65536": func(c *Config) { c.Concurrency = []int{1, 100_000_000} },
		"Requests -5: must not be negative":         func(c *Config) { c.Requests = -5 },
		"Duration -1s: must not be negative":        func(c *Config) { c.Duration = -time.Second },
		"Warmup -1: must not be negative":           func(c *Config) { c.Warmup = -1 },
		"Timeout -1s: must not be negative":         func(c *Config) { c.Timeout = -time.Second },
	} {
		cfg := base
		mod(&cfg)
		_, err := Complete(cfg).prepared()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// FuzzSweepValues: whatever numbers a flag or campaign gives, a sweep
// configuration that is accepted has finite values in range, distinct
// levels, and parameters and a result that encode as JSON (an accepted
// NaN rate used to make the result unwritable after the whole sweep).
func FuzzSweepValues(f *testing.F) {
	f.Add(0.0, 0.0, "1,2,4", 0, int64(0), int64(0))
	f.Add(math.NaN(), 0.0, "1", 64, int64(0), int64(0))
	f.Add(math.Inf(1), math.NaN(), "1,1", -5, int64(-1), int64(-1))
	f.Add(5.5, 0.3, "8,1,4", 10, int64(time.Second), int64(time.Minute))
	f.Add(1e300, 0.999, "65536", 1, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, rate, ratio float64, levels string, requests int, dur, timeout int64) {
		conc, err := ParseConcurrency(levels)
		if err != nil {
			conc = nil
		}
		cfg := Config{URL: "http://127.0.0.1:1", Concurrency: conc, Rate: rate, RangeRatio: ratio, Requests: requests,
			Duration: time.Duration(dur), Timeout: time.Duration(timeout), Seed: 1}
		c, err := Complete(cfg).prepared()
		if err != nil {
			return
		}
		if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 || c.Rate > MaxRate ||
			math.IsNaN(c.RangeRatio) || c.RangeRatio < 0 || c.RangeRatio >= 1 ||
			c.Requests < 0 || c.Duration < 0 || c.Timeout <= 0 || CheckLevels(c.Concurrency) != nil {
			t.Fatalf("accepted %+v", c)
		}
		s := &Sweep{cfg: c}
		res := &Result{Rate: c.Rate, DurationS: c.Duration.Seconds(), Workload: c.workloadRecord()}
		if _, err := json.Marshal(s.params()); err != nil {
			t.Fatalf("params: %v", err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result: %v", err)
		}
	})
}

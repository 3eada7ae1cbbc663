package campaign

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/macro"
)

// valueKeys are the campaign keys whose values come from outside (the file
// or a flag) and reach an engine.
var valueKeys = []string{"macro.rate", "macro.range_ratio", "macro.duration", "macro.concurrency", "macro.slo",
	"macro.requests", "macro.warmup", "macro.input_len", "macro.output_len", "macro.prefix_len", "macro.repeat",
	"load.stall_after", "load.poll_interval", "micro.batch", "nccl.batch", "profile.steps",
	"macro.search", "macro.search_tolerance", "macro.arrivals", "macro.burstiness", "macro.latency_from"}

// yamlOf writes key: value as a campaign file.
func yamlOf(key, value string) []byte {
	sec, k, _ := strings.Cut(key, ".")
	return []byte("host: sim\n" + sec + ":\n  " + k + ": " + value + "\n")
}

// TestOutsideValuesRefusedAtParse: the values the audit found taken by a
// campaign file are refused when it is read, naming the key and line
// (macro.rate: .inf ran a sweep whose levels never reached the journal,
// .nan made the result unwritable, [1, 1] broke the chart and compare).
func TestOutsideValuesRefusedAtParse(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"macro.rate", ".inf", "line 3: macro.rate: +Inf: want 0"},
		{"macro.rate", ".nan", "line 3: macro.rate: NaN: want 0"},
		{"macro.rate", "-.inf", "line 3: macro.rate: -Inf"},
		{"macro.range_ratio", ".nan", "line 3: macro.range_ratio: NaN: want 0 or more and under 1"},
		{"macro.concurrency", "[1, 1]", "line 3: macro.concurrency: 1 is given twice"},
		{"macro.concurrency", "[1, 100000000]", "line 3: macro.concurrency: 100000000 is more than 65536"},
		{"macro.slo", "ttft=1e-9", `line 3: macro.slo: ttft="1e-9": want a duration from 1µs to 24h`},
		{"macro.slo", "ttft=.inf", `line 3: macro.slo: ttft=".inf"`},
		{"macro.duration", "-1s", "line 3"},
		{"macro.output_len", "100000000", "line 3: macro.output_len"},
		{"micro.batch", "[8, 8]", "line 3: micro.batch: batch sizes: 8 is given twice"},
		{"macro.search", "rate", "line 3: macro.search: a search needs an SLO to meet"},
		{"macro.search", "latency", `line 3: macro.search: "latency": want concurrency, rate or speed (a trace's replay)`},
		{"macro.search_tolerance", ".nan", "line 3: macro.search_tolerance: NaN: want more than 0 and under 1"},
		{"macro.search_tolerance", "0", "line 3: macro.search_tolerance: 0: want more than 0"},
		{"macro.arrivals", "bursty", `line 3: macro.arrivals: "bursty": want poisson or constant`},
		{"macro.burstiness", ".inf", "line 3: macro.burstiness: +Inf: want 0.1 to 1000"},
		{"macro.burstiness", "0", "line 3: macro.burstiness: 0: want more than 0"},
		{"macro.latency_from", "start", `line 3: macro.latency_from: "start": want sent or intended`},
	} {
		_, err := Parse(yamlOf(tc.key, tc.value))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}

// FuzzValueKeys: whatever value a key is given, from the file or as a flag
// (SetKey), a campaign that validates maps to a sweep the engine accepts
// as well, with finite numbers that encode as JSON: the campaign and the
// engine check with the same functions.
func FuzzValueKeys(f *testing.F) {
	for i, v := range []string{".inf", ".nan", "NaN", "Inf", "-1", "0", "1e300", "[1, 1]", "1,1", "[0x10, -1]", "ttft=1e-9",
		"ttft=2s,share=NaN", "-1s", "1e9s", "99999999999999999999", "0.5", "[1, 2, 4]", "2m", "1h1h", "tpot=50"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, k uint8, v string) {
		key := valueKeys[int(k)%len(valueKeys)]
		check := func(how string, c *Campaign) {
			cfg := c.SweepConfig("")
			if err := macro.LoadWorkload(&cfg); err != nil {
				t.Fatalf("%s %s=%q: the campaign took it, the engine refuses it: %v", how, key, v, err)
			}
			for _, x := range []float64{cfg.Rate, cfg.RangeRatio} {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%s %s=%q: %g accepted", how, key, v, x)
				}
			}
			if _, err := json.Marshal(cfg.Concurrency); err != nil || c.Load.StallAfter.Duration < 0 || cfg.Duration < 0 {
				t.Fatalf("%s %s=%q: %+v", how, key, v, cfg)
			}
		}
		if c, err := Parse(yamlOf(key, v)); err == nil {
			check("file", c)
		}
		c := Defaults()
		c.Host = "sim"
		if c.SetKey(key, v) == nil && len(c.Validate()) == 0 {
			check("flag", c)
		}
	})
}

// A speed search needs a trace, and a trace takes no other search: each
// refused naming macro.search.
func TestSpeedSearchNeedsTrace(t *testing.T) {
	for body, want := range map[string]string{
		"macro:\n  slo: ttft=1s\n  search: speed\n":                                              "macro.search: speed steps a trace's replay",
		"macro:\n  slo: ttft=1s\n  search: rate\n  dataset: mooncake\n  dataset_file: t.jsonl\n": "macro.search: rate: a trace replays on its own schedule",
	} {
		_, err := Parse([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if _, err := Parse([]byte("macro:\n  slo: ttft=1s\n  search: speed\n  dataset: mooncake\n  dataset_file: t.jsonl\n")); err != nil {
		t.Errorf("a speed search over a trace: %v", err)
	}
}

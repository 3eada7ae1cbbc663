package headless_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSweepSearchOnSim: `sweep --host sim --slo … --search concurrency`
// against the simulated deployment prints the search as it goes and its
// answer, and writes the search object in the result document; an
// open-loop search prints each level's schedule.
func TestSweepSearchOnSim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		unit string
	}{
		{[]string{"--search", "concurrency", "--concurrency", "4,16,64", "--slo", "tpot=20ms"}, "concurrency"},
		{[]string{"--search", "rate", "--rate", "32", "--arrivals", "constant", "--slo", "tpot=20ms", "--search-tolerance", "0.5"}, "req/s"},
	} {
		args := append([]string{"--host", "sim", "--requests", "36", "--input-len", "32", "--output-len", "8", "--seed", "1", "--json", "-"}, c.args...)
		code, out, errs := sweepCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var doc struct {
			Search *struct {
				Answer, Lower  float64
				Upper          *float64
				Unit           string
				Runs           int
				StoppedBecause string `json:"stopped_because"`
				Steps          []map[string]any
			}
			LatencyFrom string `json:"latency_from"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Search == nil {
			t.Fatalf("no search in the result (%v):\n%s", err, out)
		}
		s := doc.Search
		if s.Unit != c.unit || s.Runs < len(s.Steps) || len(s.Steps) == 0 || s.StoppedBecause == "" || s.Answer != s.Lower ||
			(s.Upper != nil && *s.Upper <= s.Lower) || doc.LatencyFrom != "sent" {
			t.Errorf("%s: search %+v", c.unit, *s)
		}
		if !strings.Contains(errs, "search (ladder): ") || !strings.Contains(errs, "\nsearch: ") {
			t.Errorf("%s: the search is not printed as it goes:\n%s", c.unit, errs)
		}
		if strings.Count(errs, "\nsearch: ") != 1 || strings.Contains(errs, "\nslo: ") {
			t.Errorf("%s: the answer is not said once:\n%s", c.unit, errs)
		}
		if c.unit == "req/s" && !strings.Contains(errs, "schedule: constant arrivals, ") {
			t.Errorf("no schedule line:\n%s", errs)
		}
	}
}

package report

import (
	"bytes"
	"strings"
	"testing"
)

// The throughput-against-latency chart has a panel per bounded figure,
// each level labelled, and the SLO's bound drawn and named; without an
// SLO, TTFT and TPOT at p90.
func TestLatencyChart(t *testing.T) {
	levels := knownCurve().Levels
	svg, err := latencyChart(levels, "tpot=50ms,e2el=4s", "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Output throughput vs TPOT p90", "Output throughput vs E2EL p90", "SLO tpot ≤ 50ms", "SLO e2el ≤ 4s", "C=16"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(string(svg), "TTFT") {
		t.Error("a TTFT panel without a TTFT bound")
	}
	svg, _ = latencyChart(levels, "", "svg")
	if !strings.Contains(string(svg), "TTFT p90") || strings.Contains(string(svg), "SLO ") {
		t.Error("without an SLO: TTFT and TPOT, no bound")
	}
	png, err := latencyChart(levels, "tpot=50ms", "png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v", err)
	}
	if _, err := latencyChart(levels[:1], "", "svg"); err == nil {
		t.Error("one level charted")
	}
}

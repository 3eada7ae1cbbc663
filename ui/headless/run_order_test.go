package headless

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/report"
)

// controlLevel is the journal's sweep level at concurrency c.
func controlLevel(t *testing.T, journal string, c int) phases.LevelResult {
	t.Helper()
	rr, err := report.ReadJournalFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	var last *phases.LevelResult
	for _, ev := range rr.Events {
		if l, ok := ev.Data.(phases.LevelResult); ok && l.Concurrency == c {
			last = &l
		}
	}
	if last == nil {
		t.Fatalf("no level C=%d in %s", c, journal)
	}
	return *last
}

// The one-load order serves the sweep with the torch profiler configured
// and idle; a control level swept so and without the profiler (the classic
// order's load) gives the same figures within 1%.
func TestIdleProfilerCostsTheSweepUnderOnePercent(t *testing.T) {
	text := strings.Replace(simCampaign, "  concurrency: [1, 8]\n  duration: 1s\n", "  concurrency: [8]\n  duration: 3s\n", 1)
	text = strings.Replace(text, "  output_len: 8\n", "  output_len: 32\n", 1) + "run:\n  leave_server: stopped\n"
	ctx, path := simRunSetup(t, "two sweeps on the simulated host", text, 3*time.Minute)
	var levels []phases.LevelResult
	for _, order := range []string{campaignrun.OrderClassic, campaignrun.OrderOneLoad} {
		o := runCmd(t, ctx, path, "--phases", "macro", "--order", order, "--redo", "macro")
		if o.code != 0 {
			t.Fatalf("%s: exit %d\n%s", order, o.code, o.stderr)
		}
		serve := stepState(o.rep, campaignrun.Serve)
		if profiled := strings.Contains(serve.Reason, "with the profiler configured"); profiled != (order == campaignrun.OrderOneLoad) {
			t.Fatalf("%s: serve %q", order, serve.Reason)
		}
		levels = append(levels, controlLevel(t, filepath.Join(filepath.Dir(path), "nb.journal.jsonl"), 8))
	}
	// The engine's step time is what a profiler would slow down; the
	// throughput over a 3 s level also moves with the client's CPU on a
	// shared machine, so it is logged, not held to 1%.
	off, on := levels[0], levels[1]
	for _, f := range []struct {
		name    string
		off, on float64
	}{{"median TPOT", off.MedianTPOTms, on.MedianTPOTms}, {"mean TPOT", off.MeanTPOTms, on.MeanTPOTms}} {
		if f.off <= 0 || math.Abs(f.on-f.off)/f.off > 0.01 {
			t.Errorf("%s at C=8: %.2f ms without the profiler, %.2f ms with it configured: more than 1%% apart", f.name, f.off, f.on)
		}
		t.Logf("%s at C=8: %.2f ms without the profiler, %.2f ms with it configured (%+.2f%%)", f.name, f.off, f.on, 100*(f.on-f.off)/f.off)
	}
	t.Logf("output throughput at C=8: %.2f tok/s without the profiler, %.2f with it configured", off.OutputThroughput, on.OutputThroughput)
}

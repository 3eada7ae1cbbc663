package headless_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// boundsCampaign is a campaign on the simulated host that bounds a level
// by both a request count and a time (whichever comes last).
func boundsCampaign(t *testing.T, duration string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, p, "host: sim\nmacro:\n  concurrency: [1, 2]\n  requests: 6\n  duration: "+duration+
		"\n  warmup: 0\n  input_len: 8\n  output_len: 4\n")
	return p
}

// sweepDoc is the part of a sweep's result document these tests read.
type sweepDoc struct {
	Requests  int     `json:"requests"`
	DurationS float64 `json:"duration_s"`
	Levels    []struct {
		Completed, Failed int
		DurationS         float64 `json:"duration_s"`
	}
}

// --duration 0 over a campaign that sets a level's requests and a time
// clears the time bound: each level ends on its 6 requests, not after the
// campaign's 20 s.
func TestSweepDurationZeroEndsOnRequests(t *testing.T) {
	t.Parallel()
	start := time.Now()
	code, out, errs := sweepCLI(t, "-c", boundsCampaign(t, "20s"), "--duration", "0", "--json", "-")
	if code != 0 || !strings.Contains(errs, "levels 1,2, 6 requests per level,") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	var doc sweepDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Levels) != 2 {
		t.Fatalf("result %v:\n%s", err, out)
	}
	if doc.Requests != 6 || doc.DurationS != 0 {
		t.Errorf("result's requests %d duration_s %g, want 6 and none", doc.Requests, doc.DurationS)
	}
	for i, l := range doc.Levels {
		if l.Completed+l.Failed != 6 || l.DurationS >= 20 {
			t.Errorf("level %d: %d completed + %d failed in %.1f s, want 6 requests and no 20 s bound", i, l.Completed, l.Failed, l.DurationS)
		}
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the sweep took %s: the campaign's 20 s per level still bounds it", took)
	}
}

// --requests 0 clears the count: each level ends on the campaign's time.
func TestSweepRequestsZeroEndsOnTime(t *testing.T) {
	t.Parallel()
	code, out, errs := sweepCLI(t, "-c", boundsCampaign(t, "300ms"), "--requests", "0", "--json", "-")
	if code != 0 || !strings.Contains(errs, "levels 1,2, 300ms per level,") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	var doc sweepDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Levels) != 2 {
		t.Fatalf("result %v:\n%s", err, out)
	}
	if doc.Requests != 0 || doc.DurationS != 0.3 {
		t.Errorf("result's requests %d duration_s %g, want none and 0.3", doc.Requests, doc.DurationS)
	}
	for i, l := range doc.Levels {
		if l.DurationS < 0.3 || l.Completed == 0 {
			t.Errorf("level %d: %d completed in %.3f s, want the level held for 300ms", i, l.Completed, l.DurationS)
		}
	}
}

// --duration 0 --requests 0 leaves nothing to end a level: refused before
// any work, in one line naming both flags.
func TestSweepNoBoundRefused(t *testing.T) {
	t.Parallel()
	code, out, errs := sweepCLI(t, "-c", boundsCampaign(t, "20s"), "--duration", "0", "--requests", "0")
	want := "profdeck sweep: --requests and --duration: both 0, so nothing ends a level: set a request count or a duration per level\n"
	if code != 2 || errs != want || out != "" {
		t.Errorf("exit %d, stderr %q stdout %q; want 2 and %q", code, errs, out, want)
	}
}

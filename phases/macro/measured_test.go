package macro_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// Requests and duration together: the level ends at whichever comes
// last. Each request takes about 50 ms (5 steps of 10 ms).
func TestRequestsAndDurationWhicheverLast(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 10 * time.Millisecond, StepPerSeq: 0, PrefillPerToken: 0})
	// The count comes last: 12 requests one at a time take ~0.6 s, past 100 ms.
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{1}, Requests: 12, Duration: 100 * time.Millisecond,
		Warmup: 0, InputLen: 8, OutputLen: 5, Seed: 1, NoPreflight: true})
	if l := res.Levels[0]; l.Completed < 12 {
		t.Errorf("requests 12 with 100ms: %d completed, want at least 12", l.Completed)
	}
	// The duration comes last: 2 requests take ~0.1 s, the level runs 0.6 s.
	res = runSweep(t, macro.Config{URL: url, Concurrency: []int{1}, Requests: 2, Duration: 600 * time.Millisecond,
		Warmup: 0, InputLen: 8, OutputLen: 5, Seed: 1, NoPreflight: true})
	if l := res.Levels[0]; l.Completed < 6 {
		t.Errorf("requests 2 with 600ms: %d completed, want the duration's worth (about 12)", l.Completed)
	}
}

// A level with fewer than 10 completed requests is flagged in its JSON and
// warned about; a raised request count cut short says how many ran.
func TestFewRequestsFlagged(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 0, PrefillPerToken: 0})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{1, 8}, Requests: 4, Warmup: 0, InputLen: 8, OutputLen: 4, Seed: 1, NoPreflight: true})
	few, many := res.Levels[0], res.Levels[1]
	b, _ := json.Marshal(few)
	if !few.FewRequests || !strings.Contains(string(b), `"few_requests":true`) || !strings.Contains(strings.Join(few.Warnings, "\n"), "only 4 request(s) completed (fewer than 10)") {
		t.Errorf("C=1 with 4 requests not flagged: %s", b)
	}
	if many.FewRequests || many.Completed != 16 {
		t.Errorf("C=8 (raised to 16 requests): few %v, completed %d", many.FewRequests, many.Completed)
	}
	if len(many.Notes) == 0 || many.Notes[0] != "measured requests raised from 4 to 16 so that 8 stay in flight" {
		t.Errorf("C=8 notes %q", many.Notes)
	}
}

package macro_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// With Gaps, each record carries its inter-token gaps (one ITL per output
// token after the first, one per gap between chunks), and Observe sees
// the same gaps on every record, warm-up too; without Gaps the records
// carry none.
func TestRecordsCarryTheirGaps(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeServer{listed: []string{"m"}, usage: "continuous"})
	t.Cleanup(srv.Close)
	for _, gaps := range []bool{true, false} {
		var jsonl bytes.Buffer
		var mu sync.Mutex
		observed, itls := 0, 0
		observe := func(r *macro.Record) {
			mu.Lock()
			defer mu.Unlock()
			observed++
			r.EachGap(func(_ time.Duration, n int) { itls += n }, func(time.Duration) {})
		}
		lv := runSweep(t, macro.Config{URL: srv.URL, Concurrency: []int{2}, Requests: 6, Warmup: 1, InputLen: 4, OutputLen: 10, NoPreflight: true,
			JSONL: &jsonl, Gaps: gaps, Observe: observe}).Levels[0]
		n := 0
		for _, line := range bytes.Split(bytes.TrimSpace(jsonl.Bytes()), []byte("\n")) {
			var r macro.Record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			want := 0
			if gaps {
				want = r.OutputTokens - 1
			}
			if len(r.ITLms) != want || (gaps && len(r.ChunkGapsms) == 0) || (!gaps && len(r.ChunkGapsms) > 0) {
				t.Errorf("gaps %v: %d output tokens, %d ITLs, %d chunk gaps", gaps, r.OutputTokens, len(r.ITLms), len(r.ChunkGapsms))
			}
			n += r.OutputTokens - 1
		}
		if lv.Completed != 6 || observed != 7 || itls != n {
			t.Errorf("gaps %v: completed %d, observed %d records (want 7), %d ITLs seen, %d in the records", gaps, lv.Completed, observed, itls, n)
		}
	}
}

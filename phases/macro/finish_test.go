package macro_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/profdeck/profdeck/phases/macro"
)

// A stream that ends with finish_reason "abort" or "error" (vLLM's words
// for a request the engine gave up or failed) before [DONE] is a failed
// request blamed on the server, not a completed one with a short output
// (it counted as ok, with only a length warning).
func TestAbortAndErrorFinishAreFailures(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]string{"abort": macro.FailAborted, "error": macro.FailErrorEvent} {
		f := &fakeServer{listed: []string{"m"}, usage: "continuous"}
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/completions" || n.Add(1)%2 == 1 {
				f.ServeHTTP(w, r)
				return
			}
			// Two tokens, then the server's end of the request, then [DONE].
			w.Header().Set("Content-Type", "text/event-stream")
			for i, fin := range []string{"null", "null", fmt.Sprintf("%q", reason)} {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"tok \",\"finish_reason\":%s}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":%d}}\n\n", fin, i+1)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		t.Cleanup(srv.Close)
		var jsonl bytes.Buffer
		lv := runSweep(t, macro.Config{URL: srv.URL, Concurrency: []int{1}, Requests: 8, InputLen: 4, OutputLen: 10, NoPreflight: true, JSONL: &jsonl}).Levels[0]
		if lv.Completed != 4 || lv.Failed != 4 || lv.Failures[want] != 4 || lv.TotalOutputTokens != 40 {
			t.Errorf("%s: completed %d failed %d failures %v tokens %d; want 4 ok, 4 %s", reason, lv.Completed, lv.Failed, lv.Failures, lv.TotalOutputTokens, want)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(jsonl.Bytes()), []byte("\n")) {
			var r macro.Record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if r.Failure == want && r.Error != fmt.Sprintf("the server ended the request with finish_reason %q", reason) {
				t.Errorf("%s: error %q", reason, r.Error)
			}
		}
	}
}

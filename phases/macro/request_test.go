package macro_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestRequestBody: what the client sends, for both APIs: a fixed output
// length (max tokens, min_tokens, ignore_eos), streaming with usage on
// every chunk, and the key as a bearer token.
func TestRequestBody(t *testing.T) {
	t.Parallel()
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: time.Millisecond, CoarseTiming: true})
	defer emu.Close()
	var mu sync.Mutex
	bodies := map[string]map[string]any{}
	auth := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions" {
			b, _ := io.ReadAll(r.Body)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			mu.Lock()
			bodies[r.URL.Path], auth[r.URL.Path] = m, r.Header.Get("Authorization")
			mu.Unlock()
			r.Body = io.NopCloser(bytesReader(b))
		}
		emu.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, api := range []string{macro.APICompletions, macro.APIChat} {
		runSweep(t, macro.Config{URL: srv.URL + "/v1", API: api, Concurrency: []int{1}, Requests: 1, InputLen: 8, OutputLen: 7, APIKey: "k1"})
	}
	for path, lenKey := range map[string]string{"/v1/completions": "max_tokens", "/v1/chat/completions": "max_completion_tokens"} {
		b := bodies[path]
		if b == nil {
			t.Fatalf("no request to %s", path)
		}
		so, _ := b["stream_options"].(map[string]any)
		if b[lenKey] != 7.0 || b["min_tokens"] != 7.0 || b["ignore_eos"] != true || b["stream"] != true ||
			so["include_usage"] != true || so["continuous_usage_stats"] != true || b["model"] != "test/model" {
			t.Errorf("%s body %v", path, b)
		}
		if auth[path] != "Bearer k1" {
			t.Errorf("%s Authorization %q", path, auth[path])
		}
	}
	if _, ok := bodies["/v1/chat/completions"]["messages"]; !ok {
		t.Error("chat request without messages")
	}
	if _, ok := bodies["/v1/completions"]["prompt"]; !ok {
		t.Error("completions request without prompt")
	}
}

package profile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// fakeVLLM is a real HTTP server with vLLM's profiler endpoints: on stop it
// writes the real H200 table and trace into dir, as vLLM's rank 0 does.
// A completion takes 0.1 ms per output token; with failAfter > 0, the
// completions after the first failAfter of a recording answer 500.
func fakeVLLM(t *testing.T, dir string, withTable bool, failAfter int32, tokensCap ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var completions atomic.Int32
	profiling := atomic.Bool{}
	mux := http.NewServeMux()
	var inWindow atomic.Int32
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) { inWindow.Store(0); profiling.Store(true) })
	mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, r *http.Request) {
		if !profiling.Swap(false) {
			http.Error(w, "not started", 500)
			return
		}
		time.Sleep(200 * time.Millisecond) // the flush
		copyTo := func(src, dst string) {
			b, err := os.ReadFile("testdata/" + src)
			if err != nil {
				t.Error(err)
				return
			}
			if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
				t.Error(err)
			}
		}
		if withTable {
			copyTo("key_averages.txt", "profiler_out_0.txt")
		}
		copyTo("trace.json.gz", "h200_rank0.1764400000.pt.trace.json.gz")
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"test-model","object":"model"}]}`))
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		time.Sleep(time.Duration(req.MaxTokens) * 100 * time.Microsecond)
		completions.Add(1)
		if !profiling.Load() {
			// between windows
		} else if n := inWindow.Add(1); failAfter > 0 && n > failAfter {
			http.Error(w, `{"error":"engine dead"}`, http.StatusInternalServerError)
			return
		}
		n := req.MaxTokens
		if len(tokensCap) > 0 {
			n = min(n, tokensCap[0]) // a server that stops early
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": "x"}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": n}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &completions
}

// A capture over a real OpenSSH sshd: HTTP goes through SSH channels, the
// profiler directory is listed with find and read back over SSH, and the
// trace is summarised on the host by the embedded Python script.
func TestCaptureOverSSH(t *testing.T) {
	sshtest.Require(t)
	python := sshhost.Python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, h := sshhost.Dial(ctx, t, sshtest.Options{})

	for _, tc := range []struct {
		name      string
		withTable bool
		wantSrc   string
	}{
		{"table", true, "profiler_out_0.txt (key_averages table"},
		{"trace on the host", false, "pt.trace.json.gz (trace summarised on the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profDir := filepath.Join(t.TempDir(), "vllm profile") // a space: arguments must be quoted
			if err := os.Mkdir(profDir, 0o755); err != nil {
				t.Fatal(err)
			}
			// An old capture in the directory must not be taken for the new one.
			if err := os.WriteFile(filepath.Join(profDir, "old.pt.trace.json"), []byte(`{"traceEvents":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			vllm, _ := fakeVLLM(t, profDir, tc.withTable, 0)
			ch := make(chan phases.Event, 1024)
			go func() {
				for range ch {
				}
			}()
			levels, err := profile.CaptureLevels(ctx, profile.Complete(profile.Config{Host: h, URL: vllm.URL, ProfilerDir: profDir,
				Concurrency: []int{1, 2}, Steps: 20, OutputLen: 5, RemoteOver: 1000, Python: python}), &phases.Emitter{Out: ch})
			close(ch)
			if err != nil {
				t.Fatal(err)
			}
			if len(levels) != 2 {
				t.Fatalf("%d levels", len(levels))
			}
			s := levels[1]
			if !strings.Contains(s.Source, tc.wantSrc) {
				t.Errorf("source %q, want %q", s.Source, tc.wantSrc)
			}
			if s.TotalCUDAUs < 785.7 || s.TotalCUDAUs > 785.8 {
				t.Errorf("total %v, want 785.787", s.TotalCUDAUs)
			}
			// No step annotations in the real trace, no /metrics: the steps
			// are estimated from the window's tokens, and it says so.
			if s.Level != 2 || s.OutputTokens <= 0 || s.DecodeSteps < 20 || !strings.Contains(s.DecodeStepsSource, "estimated") {
				t.Errorf("C=%d tokens %d, steps %d (%s)", s.Level, s.OutputTokens, s.DecodeSteps, s.DecodeStepsSource)
			}
			for _, f := range s.Files {
				if strings.Contains(f, "old.pt") {
					t.Errorf("an old file counted as new: %v", s.Files)
				}
			}
		})
	}
}

// When the load fails part-way, the profile of what ran is still read and
// summarised, with a note, and the profiler is stopped.
func TestCaptureKeepsProfileWhenLoadFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	profDir := t.TempDir()
	vllm, _ := fakeVLLM(t, profDir, true, 2, 5)
	s, err := profile.Capture(ctx, profile.Complete(profile.Config{Host: local.New(), URL: vllm.URL, ProfilerDir: profDir, Steps: 100, OutputLen: 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "the load stopped early") || !strings.Contains(notes, "500") {
		t.Errorf("notes %q", s.Notes)
	}
	// The server completes two requests after start_profile, then fails.
	// The one stream's request in flight when the profiler started may end
	// on either side of the client's first count, and on the server before
	// or after the profiler's start: the window holds one to three
	// requests (two, and the one in flight), each with its 5 tokens from
	// the server's usage.
	if s.Requests < 1 || s.Requests > 3 || s.OutputTokens != 5*int64(s.Requests) {
		t.Errorf("%d requests, %d tokens: want 1 to 3 requests of 5 tokens", s.Requests, s.OutputTokens)
	}
	if !strings.Contains(notes, fmt.Sprintf("covers %d output tokens", s.OutputTokens)) {
		t.Errorf("the note does not say the window's %d tokens: %q", s.OutputTokens, s.Notes)
	}
	if s.TotalCUDAUs < 785.7 {
		t.Errorf("total %v", s.TotalCUDAUs)
	}
}

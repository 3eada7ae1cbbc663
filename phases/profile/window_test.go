package profile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/local"
)

// slowAdmission is a server whose engine steps every 20 ms and admits one
// waiting request every second step (as a long prefill would), decoding one
// token per step for every running request.
type slowAdmission struct {
	mu                     sync.Mutex
	steps                  int
	waiting                []chan struct{}
	running                map[chan struct{}]int // tokens left
	profiling              bool
	runningAtStart         int
	endedInWindow, started int
}

func (s *slowAdmission) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps++
	for c, left := range s.running {
		if left < 0 {
			continue // admitted, its length not yet set by its handler
		}
		if left <= 1 {
			delete(s.running, c)
			if s.profiling {
				s.endedInWindow++
			}
			close(c)
			continue
		}
		s.running[c] = left - 1
	}
	if s.steps%2 == 0 && len(s.waiting) > 0 {
		c := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.running[c] = -1 // set by the handler below
	}
}

func (s *slowAdmission) serve(t *testing.T, dir string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		fmt.Fprintf(w, "vllm:iteration_tokens_total_count{engine=\"0\"} %d\nvllm:num_requests_running{engine=\"0\"} %d\n", s.steps, len(s.running))
	})
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.profiling, s.runningAtStart = true, len(s.running)
		s.mu.Unlock()
	})
	mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.profiling = false
		s.mu.Unlock()
		b, err := os.ReadFile("testdata/trace.json.gz")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "r0.1764400000.pt.trace.json.gz"), b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		done := make(chan struct{})
		s.mu.Lock()
		s.started++
		s.waiting = append(s.waiting, done)
		s.mu.Unlock()
		// The tick admits it with -1; give it its length once admitted.
		for admitted := false; !admitted; {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
			s.mu.Lock()
			if s.running[done] == -1 {
				s.running[done], admitted = req.MaxTokens, true
			}
			s.mu.Unlock()
		}
		select {
		case <-done:
		case <-r.Context().Done():
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": "x"}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": req.MaxTokens}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A window opens only once every stream runs, and its requests outlast it:
// against a server that admits one request every second step, the profiler
// starts with all C running and no request ends inside the window, so the
// window holds decode steps, not the admission's prefills.
func TestWindowWaitsForEveryStream(t *testing.T) {
	dir := t.TempDir()
	s := &slowAdmission{running: map[chan struct{}]int{}}
	srv := s.serve(t, dir)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				s.tick()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const conc = 8
	_, err := profile.CaptureLevels(ctx, profile.Complete(profile.Config{Host: local.New(), URL: srv.URL, ProfilerDir: dir,
		Concurrency: []int{conc}, Steps: 20, InputLen: 8, OutputLen: 5}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningAtStart != conc {
		t.Errorf("the profiler started with %d of %d streams running", s.runningAtStart, conc)
	}
	if s.endedInWindow != 0 {
		t.Errorf("%d requests ended inside the window (a new prefill each)", s.endedInWindow)
	}
}

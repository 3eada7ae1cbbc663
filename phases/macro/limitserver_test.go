package macro_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// limitServer is an OpenAI completions server on loopback whose limit is
// known: a request's first token comes d0 after it is admitted, and each
// next token a + b×(requests running, itself included) after the one
// before, on a fixed clock (a late wake-up does not add up). At most
// maxRunning run at once (0: no bound); the rest wait in line.
//
// Closed loop at C: C run all the time, so TPOT = a + b·C.
// Open loop at rate λ, constant arrivals: by Little's law λ·E2E run on
// average, E2E = d0 + (out−1)·TPOT, so TPOT = (a + bλd0) / (1 − bλ(out−1)).
type limitServer struct {
	d0, a, b   time.Duration
	maxRunning int
	running    atomic.Int64
	slots      chan struct{}
}

// tpotClosed is TPOT at concurrency c.
func (ls *limitServer) tpotClosed(c int) time.Duration { return ls.a + time.Duration(c)*ls.b }

// tpotOpen is TPOT at rate λ with out output tokens (unbounded when the
// server cannot keep up).
func (ls *limitServer) tpotOpen(rate float64, out int) time.Duration {
	b := ls.b.Seconds()
	d := 1 - b*rate*float64(out-1)
	if d <= 0 {
		return time.Hour
	}
	return time.Duration((ls.a.Seconds() + b*rate*ls.d0.Seconds()) / d * float64(time.Second))
}

// start serves ls on loopback until the test ends and returns its URL.
func (ls *limitServer) start(t testing.TB) string {
	t.Helper()
	if ls.maxRunning > 0 {
		ls.slots = make(chan struct{}, ls.maxRunning)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"test/model","object":"model","max_model_len":8192}]}`)
	})
	mux.HandleFunc("/v1/completions", ls.complete)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

func (ls *limitServer) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens < 1 {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	if ls.slots != nil {
		select {
		case ls.slots <- struct{}{}:
			defer func() { <-ls.slots }()
		case <-r.Context().Done():
			return
		}
	}
	ls.running.Add(1)
	defer ls.running.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	next := time.Now().Add(ls.d0)
	for i := 1; i <= req.MaxTokens; i++ {
		select {
		case <-time.After(time.Until(next)):
		case <-r.Context().Done():
			return
		}
		finish := "null"
		if i == req.MaxTokens {
			finish = `"length"`
		}
		fmt.Fprintf(w, `data: {"id":"c","object":"text_completion","model":"test/model","choices":[{"index":0,"text":" t","finish_reason":%s}],`+
			`"usage":{"prompt_tokens":8,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", finish, i, 8+i)
		fl.Flush()
		next = next.Add(ls.a + time.Duration(ls.running.Load())*ls.b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

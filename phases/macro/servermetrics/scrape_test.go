package servermetrics

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// counterServer serves /metrics whose generation counter grows by step per
// request, with two engines.
func counterServer(t *testing.T, step float64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n := float64(hits.Add(1))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\n")
		fmt.Fprintf(w, "vllm:num_requests_running{engine=\"0\"} 4\nvllm:num_requests_running{engine=\"1\"} 5\n")
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\n")
		fmt.Fprintf(w, "vllm:generation_tokens_total{engine=\"0\"} %g\nvllm:generation_tokens_total{engine=\"1\"} %g\n", n*step/2, n*step/2)
		fmt.Fprintf(w, "# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total %g\n", n*100)
		fmt.Fprintf(w, "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total %g\n", n*70)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestScrapeRates(t *testing.T) {
	srv, _ := counterServer(t, 1000)
	s := NewScraper(srv.URL+"/metrics", srv.Client())
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	start := time.Now()
	first, err := s.Scrape(ctxT(t), t0)
	d1 := time.Since(start).Seconds()
	if err != nil {
		t.Fatal(err)
	}
	if !first.Available || first.Running != 9 || first.IntervalS != 0 || first.GenTokS != 0 || first.Engines != 2 {
		t.Fatalf("first scrape: %+v", first)
	}
	start = time.Now()
	second, err := s.Scrape(ctxT(t), t0.Add(2*time.Second))
	d2 := time.Since(start).Seconds()
	if err != nil {
		t.Fatal(err)
	}
	// The times are when the server answered: the given ones plus each
	// fetch's time (a few hundred microseconds; tens of milliseconds for a
	// first connection on a loaded machine), so the interval is 2 s give or
	// take the fetches, and the rate is the 1000 tokens over it.
	if second.IntervalS < 2-d1 || second.IntervalS > 2+d2 || math.Abs(second.GenTokS-1000/second.IntervalS) > 1e-6*second.GenTokS {
		t.Fatalf("want 1000 tokens over 2 s (fetches of %.4f s and %.4f s) = about 500 tok/s, got %+v", d1, d2, second)
	}
	if second.SpecAcceptRate == nil || !near(*second.SpecAcceptRate, 0.7) {
		t.Fatalf("spec acceptance %v, want 0.7", second.SpecAcceptRate)
	}
}

func TestScrape404IsUnavailableNotError(t *testing.T) {
	srv, _ := counterServer(t, 1)
	s := NewScraper(srv.URL+"/nothing-here", srv.Client())
	st, err := s.Scrape(ctxT(t), time.Now())
	if err != nil {
		t.Fatalf("404 must not be an error: %v", err)
	}
	if st.Available || st.Note != Unavailable {
		t.Fatalf("got %+v", st)
	}
}

func TestScrapeConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	s := NewScraper("http://"+addr+"/metrics", &http.Client{Timeout: 5 * time.Second})
	st, err := s.Scrape(ctxT(t), time.Now())
	if err != nil {
		t.Fatalf("connection refused must not be an error: %v", err)
	}
	if st.Available || st.Note != Unavailable {
		t.Fatalf("got %+v", st)
	}
}

func TestScrapeServerErrorAndForeignMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			http.Error(w, "engine dead", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "go_goroutines 12")
	}))
	defer srv.Close()
	st, err := NewScraper(srv.URL+"/boom", srv.Client()).Scrape(ctxT(t), time.Now())
	if err == nil || st.Available || !strings.Contains(st.Note, "HTTP 500") {
		t.Fatalf("want an HTTP 500 error and a note, got %+v, %v", st, err)
	}
	st, err = NewScraper(srv.URL+"/metrics", srv.Client()).Scrape(ctxT(t), time.Now())
	if err == nil || st.Available || !strings.Contains(st.Note, "no vLLM series") {
		t.Fatalf("want a no-vLLM note, got %+v, %v", st, err)
	}
}

func TestScrapeTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	s := NewScraper(srv.URL+"/metrics", srv.Client())
	s.Timeout = 100 * time.Millisecond
	start := time.Now()
	st, err := s.Scrape(ctxT(t), time.Now())
	if err == nil || st.Available {
		t.Fatalf("want a timeout error, got %+v %v", st, err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("the scrape did not honour its timeout")
	}
}

func TestStatsCounterReset(t *testing.T) {
	prev := &Snapshot{GenerationTokens: 1e6, Found: []string{nameGenTokens}}
	cur := Snapshot{GenerationTokens: 300, Found: []string{nameGenTokens}}
	st := Stats(cur, prev, time.Second, time.Now())
	if st.GenTokS != 300 {
		t.Fatalf("a reset counter counts from zero: got %v", st.GenTokS)
	}
}

func TestSummarize(t *testing.T) {
	if Summarize(nil) != nil {
		t.Fatal("no samples, no summary")
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	samples := []phases.ServerStats{
		{Note: Unavailable, At: t0},
		{Available: true, At: t0.Add(1 * time.Second), Running: 10, Waiting: 0, KVCacheUsage: 0.2, Preemptions: 5, GenTokensTotal: 1000, HasSpec: true, SpecAcceptedTotal: 10, SpecDraftTotal: 20},
		{Available: true, At: t0.Add(2 * time.Second), Running: 20, Waiting: 4, KVCacheUsage: 0.9, Preemptions: 6, GenTokensTotal: 2500, HasSpec: true, SpecAcceptedTotal: 40, SpecDraftTotal: 60},
		{Available: true, At: t0.Add(3 * time.Second), Running: 30, Waiting: 2, KVCacheUsage: 0.5, Preemptions: 8, GenTokensTotal: 3000, HasSpec: true, SpecAcceptedTotal: 50, SpecDraftTotal: 80},
	}
	got := Summarize(samples)
	if !got.Available || got.Samples != 4 || got.MeanRunning != 20 || got.MeanWaiting != 2 || got.MaxWaiting != 4 {
		t.Fatalf("got %+v", got)
	}
	if got.MaxKVCacheUsage != 0.9 || got.Preemptions != 3 || got.GenerationTokS != 1000 {
		t.Fatalf("got %+v", got)
	}
	if got.SpecAcceptRate == nil || !near(*got.SpecAcceptRate, 40.0/60) {
		t.Fatalf("spec %v", got.SpecAcceptRate)
	}
	if got.Note != Unavailable {
		t.Fatalf("a gap in the level is noted: %q", got.Note)
	}
	none := Summarize([]phases.ServerStats{{Note: Unavailable}, {Note: Unavailable}})
	if none.Available || none.Note != Unavailable || none.Samples != 2 {
		t.Fatalf("got %+v", none)
	}
}

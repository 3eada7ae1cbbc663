package servermetrics

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRateFromLateAnswers: a server generating 1,000 tokens a second that
// answers its scrapes after 0 or 150 ms in turn (a busy machine). The
// counters are read when it answers, so a rate timed from when the
// scrape was asked for is off by up to 30% over half a second; timed from
// the answer, it is right.
func TestRateFromLateAnswers(t *testing.T) {
	t0 := time.Now()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			time.Sleep(150 * time.Millisecond)
		}
		tokens := 1000 * time.Since(t0).Seconds()
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} %g\n", tokens)
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\n")
	}))
	defer srv.Close()
	s := NewScraper(srv.URL+"/metrics", srv.Client())
	for i := 0; i < 5; i++ {
		st, err := s.Scrape(ctxT(t), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && math.Abs(st.GenTokS-1000) > 60 {
			t.Errorf("scrape %d: %.0f tok/s over %.3f s, want 1,000", i, st.GenTokS, st.IntervalS)
		}
		time.Sleep(600 * time.Millisecond)
	}
}

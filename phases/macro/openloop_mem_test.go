package macro_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/memtest"
)

// An open loop at a rate nothing can serve (100,000 requests/s against a
// server that holds every request) keeps at most its bound of requests in
// flight (MaxOpenInFlight, lowered here to 300), in bounded memory, and
// says so on the level; it used to start a request per arrival without
// limit.
func TestOpenLoopInFlightBounded(t *testing.T) {
	const bound = 300
	got := memtest.Run(t, 100, func() string {
		macro.SetMaxOpenInFlight(bound)
		var now, peak atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := now.Add(1)
			defer now.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		s, err := macro.NewSweep(macro.Complete(macro.Config{URL: srv.URL, Model: "m", Rate: 1e5, Duration: 2 * time.Second,
			InputLen: 8, OutputLen: 4, NoPreflight: true, Timeout: 5 * time.Second, Seed: 1}))
		if err != nil {
			return err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := s.Run(ctx, nil)
		if err != nil {
			return err.Error()
		}
		notes := ""
		for _, l := range res.Levels {
			notes += strings.Join(l.Notes, "; ")
		}
		return fmt.Sprintf("peak-in-flight=%d notes=%s", peak.Load(), notes)
	})
	var peak int
	fmt.Sscanf(got, "peak-in-flight=%d", &peak)
	if peak > bound || !strings.Contains(got, fmt.Sprintf("open loop held at %d requests in flight", bound)) {
		t.Fatalf("got %s", got)
	}
}

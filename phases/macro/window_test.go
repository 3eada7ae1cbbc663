package macro_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestServerAndClientTokensAgree: as the server's only user, the client's
// received tokens and the server's generated ones over the level's
// throughput window agree within 2%.
func TestServerAndClientTokensAgree(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 10 * time.Millisecond, StepPerSeq: 200 * time.Microsecond, PrefillPerToken: 1, MaxNumSeqs: 16})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{8, 32}, Duration: 1500 * time.Millisecond, Warmup: 2,
		InputLen: 16, OutputLen: 24, Seed: 3, Scraper: servermetrics.NewScraper(url+"/metrics", nil)})
	for _, lv := range res.Levels {
		sl := lv.Server
		if sl == nil || sl.GenerationWindow != "client_window" || sl.WindowClientTokens <= 0 {
			t.Fatalf("C=%d: no window figures: %+v", lv.Concurrency, sl)
		}
		if !sl.TokensAgree || sl.TokenAgreement != "" {
			t.Errorf("C=%d: server %.0f tokens, client %d: %s", lv.Concurrency, sl.WindowGenerationTokens, sl.WindowClientTokens, sl.TokenAgreement)
		}
		// The engine's step mix over the same window: steps, and prompt against generation tokens.
		if m := sl.StepMix; m == nil || m.Steps <= 0 || m.StepsPerS <= 0 || m.GenerationTokens != sl.WindowGenerationTokens ||
			m.DecodeTokens <= 0 || m.TokensPerStep <= 0 || m.TokensPerStep > float64(16*(16+1)) {
			t.Errorf("C=%d: step mix %+v", lv.Concurrency, m)
		}
		// The client's throughput is the tokens over its window; the server's over the same edges.
		within(t, fmt.Sprintf("C=%d server/client tok/s", lv.Concurrency), sl.GenerationTokS, lv.OutputThroughput, 0.03)
	}
	// At C=32 with 16 seats, the scheduler ran 16 for most of the window with requests waiting.
	if sl := res.Levels[1].Server; sl.MaxRunning != 16 || sl.AtMaxRunningShare < 0.5 || sl.WaitingShare < 0.5 {
		t.Errorf("C=32 scheduler: max running %.0f, at max %.2f, waiting %.2f", sl.MaxRunning, sl.AtMaxRunningShare, sl.WaitingShare)
	}
}

// TestAnotherClientIsSaid: a second client on the same server makes the
// server generate more than this client received, and the level says so.
func TestAnotherClientIsSaid(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 10 * time.Millisecond, StepPerSeq: 100 * time.Microsecond, PrefillPerToken: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// The other client: four requests at a time, non-streamed.
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				body := `{"model":"test/model","prompt":"a b c","max_tokens":50,"stream":false}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Duration: 1500 * time.Millisecond, InputLen: 8, OutputLen: 20,
		Seed: 4, Scraper: servermetrics.NewScraper(url+"/metrics", nil)})
	lv := res.Levels[0]
	if lv.Server.TokensAgree || !strings.Contains(lv.Server.TokenAgreement, "more tokens than this client received") {
		t.Fatalf("agreement %q (server %.0f, client %d)", lv.Server.TokenAgreement, lv.Server.WindowGenerationTokens, lv.Server.WindowClientTokens)
	}
	found := false
	for _, w := range lv.Warnings {
		found = found || strings.Contains(w, "another client")
	}
	if !found {
		t.Errorf("no warning in %q", lv.Warnings)
	}
}

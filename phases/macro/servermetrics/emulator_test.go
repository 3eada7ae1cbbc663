package servermetrics_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// The emulator's /metrics moves with its load: idle before, requests
// running and tokens generated during a level, idle again after, and the
// generation counter agrees with what the client received.
func TestEmulatorMetricsFollowLoad(t *testing.T) {
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", CoarseTiming: true})
	srv := httptest.NewServer(emu)
	defer func() { srv.CloseClientConnections(); srv.Close(); emu.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	sc := servermetrics.NewScraper(srv.URL+"/metrics", srv.Client())
	before, err := sc.Scrape(ctx, time.Now())
	if err != nil || !before.Available || before.Running != 0 || before.GenTokensTotal != 0 {
		t.Fatalf("idle emulator: %+v, %v", before, err)
	}

	events := make(chan phases.Event, 4096)
	sw, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: srv.URL, Concurrency: []int{8}, Requests: 24, InputLen: 32, OutputLen: 96,
		Seed: 1, Scraper: servermetrics.NewScraper(srv.URL+"/metrics", srv.Client())})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(ctx, &phases.Emitter{Out: events})
	if err != nil {
		t.Fatal(err)
	}
	close(events)
	var peakRunning, peakGen float64
	scrapes := 0
	for ev := range events {
		if st, ok := ev.Data.(phases.ServerStats); ok && st.Available {
			scrapes++
			peakRunning = max(peakRunning, st.Running)
			peakGen = max(peakGen, st.GenTokS)
		}
	}
	if scrapes < 2 {
		t.Fatalf("want a scrape a second during the level, got %d", scrapes)
	}
	if peakRunning < 4 || peakRunning > 8 {
		t.Errorf("running requests peaked at %v, want near the concurrency 8", peakRunning)
	}
	if peakGen <= 0 {
		t.Errorf("generation tok/s never rose above 0")
	}
	lv := res.Levels[0]
	if lv.Server == nil || !lv.Server.Available || lv.Server.MeanRunning <= 0 || lv.Server.GenerationTokS <= 0 {
		t.Fatalf("level server summary: %+v", lv.Server)
	}
	t.Logf("client %.0f tok/s, server %.0f tok/s, mean running %.1f", lv.OutputThroughput, lv.Server.GenerationTokS, lv.Server.MeanRunning)

	after, err := sc.Scrape(ctx, time.Now())
	if err != nil || after.Running != 0 || after.Waiting != 0 {
		t.Fatalf("after the sweep: %+v, %v", after, err)
	}
	// Every token the server generated went to a request of this sweep
	// (warm-up and calibration included), so the counter is at least the
	// measured output.
	if after.GenTokensTotal < float64(lv.TotalOutputTokens) {
		t.Fatalf("server generated %v tokens, client counted %d", after.GenTokensTotal, lv.TotalOutputTokens)
	}
}

// With speculative decoding the acceptance the scraper computes from the
// emulator's counters is what the emulator's drafts make: each of the 3
// draft positions is accepted with chance 0.6 until the first rejection,
// so accepted/drafted = (0.6 + 0.6² + 0.6³) / 3 ≈ 0.392.
func TestEmulatorSpecDecodeAcceptance(t *testing.T) {
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", CoarseTiming: true, TokensPerStep: 4, SpecAcceptRate: 0.6})
	srv := httptest.NewServer(emu)
	defer func() { srv.CloseClientConnections(); srv.Close(); emu.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := servermetrics.NewScraper(srv.URL+"/metrics", srv.Client())
	t0 := time.Now()
	if _, err := sc.Scrape(ctx, t0); err != nil {
		t.Fatal(err)
	}
	sw, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: srv.URL, Concurrency: []int{8}, Requests: 16, InputLen: 32, OutputLen: 128, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	st, err := sc.Scrape(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !st.HasSpec || st.SpecAcceptRate == nil {
		t.Fatalf("no acceptance: %+v", st)
	}
	want := (0.6 + 0.36 + 0.216) / 3
	if a := *st.SpecAcceptRate; a < want-0.04 || a > want+0.04 {
		t.Fatalf("acceptance %.3f, want about %.3f", a, want)
	}
	t.Logf("acceptance %.3f over %.0f draft tokens", *st.SpecAcceptRate, st.SpecDraftTotal)
}

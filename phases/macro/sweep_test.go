package macro_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestPlateauWhereEmulatorSaturates: at most 8 requests run at once, so
// throughput doubles up to C=8 and not beyond; --stop-at-plateau ends the
// sweep after C=16 showed it. (Outputs are long enough that the slot a
// request leaves until the next one arrives costs little at C=8.)
func TestPlateauWhereEmulatorSaturates(t *testing.T) {
	t.Parallel()
	cfg := vllmemu.Config{StepTime: 3 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, MaxNumSeqs: 8, CoarseTiming: true}
	_, url := startEmu(t, cfg)
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{4, 8, 16, 32}, Requests: 32, InputLen: 16, OutputLen: 32,
		StopAtPlateau: true, Seed: 8}))
	if err != nil {
		t.Fatal(err)
	}
	evs, done := collect()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Run(ctx, &phases.Emitter{Out: evs})
	close(evs)
	got := <-done
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Levels {
		t.Logf("C=%d %.0f tok/s", l.Concurrency, l.OutputThroughput)
	}
	if res.Plateau == nil || res.Plateau.Concurrency != 8 {
		t.Fatalf("plateau %+v, want C=8", res.Plateau)
	}
	if len(res.Levels) != 3 || res.Stopped != "plateau" {
		t.Errorf("%d levels, stopped %q: want the sweep to end after C=16", len(res.Levels), res.Stopped)
	}
	if got[phases.KindMacroPlateau] != 1 || got[phases.KindMacroLevel] != 3 || got[phases.KindMacroLevelStarted] != 3 {
		t.Errorf("events %v", got)
	}
}

// collect counts events by kind until the channel closes.
func collect() (chan phases.Event, <-chan map[string]int) {
	ch := make(chan phases.Event, 16)
	done := make(chan map[string]int, 1)
	go func() {
		m := map[string]int{}
		for ev := range ch {
			m[ev.Kind]++
		}
		done <- m
	}()
	return ch, done
}

// TestWarmupSendsExactly: the server sees warm-up + measured requests per
// level and nothing else; warm-up requests are in the JSONL but not counted.
func TestWarmupSendsExactly(t *testing.T) {
	t.Parallel()
	for _, warm := range []int{0, 3} {
		emu, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
		var jsonl bytes.Buffer
		res := runSweep(t, macro.Config{URL: url, Concurrency: []int{1, 3}, Requests: 6, Warmup: warm, InputLen: 16, OutputLen: 5, Seed: 9, JSONL: &jsonl})
		// Warm-up and measured requests of each level, and the pre-flight.
		if got, want := emu.State().Succeeded, int64(2*(6+warm)+1); got != want {
			t.Errorf("warmup %d: server answered %d completions, want %d", warm, got, want)
		}
		lines, warmLines := 0, 0
		for _, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
			var r macro.Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			lines++
			if r.Warmup {
				warmLines++
			}
		}
		if lines != 2*(6+warm) || warmLines != 2*warm {
			t.Errorf("warmup %d: %d JSONL lines (%d warm-up)", warm, lines, warmLines)
		}
		for _, l := range res.Levels {
			if l.Completed != 6 {
				t.Errorf("warmup %d C=%d: completed %d, want 6", warm, l.Concurrency, l.Completed)
			}
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSteering: concurrency changes live, pause stops new sends, Stop
// ends the sweep after the requests in flight.
func TestSteering(t *testing.T) {
	t.Parallel()
	emu, url := startEmu(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{2, 4}, Duration: 20 * time.Second, InputLen: 16, OutputLen: 20, Seed: 10,
		NoPreflight: true}))
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		res *macro.Result
		err error
	}
	ch := make(chan out, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { r, err := s.Run(ctx, nil); ch <- out{r, err} }()
	running := func() int { return emu.State().Running }
	waitFor(t, "2 running", func() bool { return running() == 2 && s.Concurrency() == 2 })
	s.SetConcurrency(6)
	waitFor(t, "6 running", func() bool { return running() == 6 })
	s.Pause()
	if !s.Paused() {
		t.Fatal("Paused() false after Pause")
	}
	waitFor(t, "the paused sweep to drain", func() bool { st := emu.State(); return st.Running == 0 && st.Waiting == 0 })
	// A request reaches the engine's prompt counter when it is scheduled;
	// the success counter moves later, once its handler wrote the last
	// chunk, so it may still move after the batch emptied.
	n := emu.State().PromptTokens
	time.Sleep(100 * time.Millisecond)
	if st := emu.State(); st.PromptTokens != n || st.Running != 0 || st.Waiting != 0 {
		t.Fatal("requests were sent while paused")
	}
	s.Resume()
	waitFor(t, "6 running again", func() bool { return running() == 6 })
	s.Stop()
	var o out
	select {
	case o = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end the sweep")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(o.res.Levels) != 1 || o.res.Stopped == "" {
		t.Fatalf("levels %d stopped %q, want one level and a reason", len(o.res.Levels), o.res.Stopped)
	}
	lv := o.res.Levels[0]
	if lv.Concurrency != 6 || lv.Failed != 0 || lv.Completed == 0 || int64(lv.Completed) != emu.State().Succeeded {
		t.Errorf("level C=%d completed %d failed %d (server %d): in-flight requests must finish and count", lv.Concurrency, lv.Completed, lv.Failed, emu.State().Succeeded)
	}
	if notes := strings.Join(lv.Notes, "; "); !strings.Contains(notes, "from 2 to 6") || !strings.Contains(notes, "paused") {
		t.Errorf("notes %q", notes)
	}
	// The level says it was steered, what changed, in its own field.
	if st := strings.Join(lv.Steered, "; "); len(lv.Steered) != 2 || !strings.HasPrefix(st, "concurrency 2 → 6 at ") || !strings.Contains(st, "; paused ") {
		t.Errorf("steered %q", lv.Steered)
	}
}

// TestCancelKeepsLevels: cancelling the context cuts in-flight requests
// (not counted as failures) and returns the finished levels.
func TestCancelKeepsLevels(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	s, _ := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{1, 2}, Requests: 4, Duration: 0, InputLen: 8, OutputLen: 4, Seed: 11}))
	s2, _ := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{3}, Duration: time.Minute, InputLen: 8, OutputLen: 4000, Seed: 11, NoPreflight: true}))
	if res, err := s.Run(context.Background(), nil); err != nil || len(res.Levels) != 2 {
		t.Fatalf("%v %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := s2.Run(ctx, nil)
	if err == nil || res == nil {
		t.Fatalf("cancelled run: res %v err %v", res, err)
	}
	if len(res.Levels) == 1 && res.Levels[0].Failed != 0 {
		t.Errorf("cancelled requests counted as failed: %+v", res.Levels[0].Failures)
	}
}

// TestRateMode: open loop; each request records its scheduled and actual
// send time.
func TestRateMode(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	var jsonl bytes.Buffer
	res := runSweep(t, macro.Config{URL: url, Rate: 50, Requests: 25, InputLen: 8, OutputLen: 5, Seed: 12, JSONL: &jsonl})
	if len(res.Levels) != 1 {
		t.Fatalf("%d levels", len(res.Levels))
	}
	lv := res.Levels[0]
	if lv.Rate != 50 || lv.Completed != 25 {
		t.Errorf("rate %g completed %d", lv.Rate, lv.Completed)
	}
	var prev float64
	for i, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
		var r macro.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.SentS < r.ScheduledS || r.SendLagMs < 0 || (i > 0 && r.ScheduledS == prev) {
			t.Errorf("request %d: scheduled %.4f sent %.4f lag %.3f", r.Index, r.ScheduledS, r.SentS, r.SendLagMs)
		}
		prev = r.ScheduledS
	}
	// 25 Poisson arrivals at 50/s span about half a second.
	if lv.DurationS < 0.15 || lv.DurationS > 2 {
		t.Errorf("duration %.2fs for 25 arrivals at 50/s", lv.DurationS)
	}
}

// TestServerMetricsScraped: with a scraper the level carries the server's
// side, and a server without /metrics still sweeps.
func TestServerMetricsScraped(t *testing.T) {
	t.Parallel()
	emu, url := startEmu(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{4}, Duration: 2200 * time.Millisecond, InputLen: 8, OutputLen: 20, Seed: 13,
		Scraper: servermetrics.NewScraper(url+"/metrics", nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 16)
	var ticks []phases.MacroTick
	var stats []phases.ServerStats
	got := make(chan struct{})
	go func() {
		defer close(got)
		for ev := range ch {
			switch d := ev.Data.(type) {
			case phases.MacroTick:
				ticks = append(ticks, d)
			case phases.ServerStats:
				stats = append(stats, d)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Run(ctx, &phases.Emitter{Out: ch})
	close(ch)
	<-got
	if err != nil {
		t.Fatal(err)
	}
	sl := res.Levels[0].Server
	if sl == nil || !sl.Available || sl.MeanRunning <= 0 || sl.GenerationTokS <= 0 {
		t.Errorf("server level %+v", sl)
	}
	if len(ticks) < 2 || len(stats) < 2 {
		t.Fatalf("%d ticks and %d server scrapes in a 2.2 s level, want 2 or more of each", len(ticks), len(stats))
	}
	// One second at C=4 with 5 ms steps is about 800 tokens.
	tk := ticks[1]
	if tk.Concurrency != 4 || tk.InFlight != 4 || tk.OutputTokS < 400 || tk.TPOTp50ms < 4 || tk.LevelProgress <= 0 || tk.LevelProgress > 1 {
		t.Errorf("tick %+v", tk)
	}
	// Some scrape inside the level (a second's, or a window edge's) saw
	// the four requests running.
	saw := false
	for _, st := range stats[1:] {
		saw = saw || (st.Available && st.Running == 4)
	}
	if !saw {
		t.Errorf("no server scrape saw 4 running: %+v", stats)
	}
	// No /metrics at all: the sweep runs, the level says unavailable.
	mux := http.NewServeMux()
	mux.Handle("/v1/", emu)
	mux.Handle("/tokenize", emu)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res = runSweep(t, macro.Config{URL: srv.URL, Concurrency: []int{2}, Requests: 4, InputLen: 8, OutputLen: 5, Seed: 13,
		Scraper: servermetrics.NewScraper(srv.URL+"/metrics", nil)})
	if sl := res.Levels[0].Server; sl == nil || sl.Available || res.Levels[0].Completed != 4 {
		t.Errorf("without /metrics: server %+v completed %d", sl, res.Levels[0].Completed)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true, APIKey: "sekrit"})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{1}, Requests: 2, InputLen: 8, OutputLen: 3, APIKey: "sekrit"})
	if res.Levels[0].Completed != 2 {
		t.Errorf("completed %d with the right key", res.Levels[0].Completed)
	}
	s, _ := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{1}, Requests: 2, APIKey: "wrong"}))
	_, err := s.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong key: %v, want a 401 before any request", err)
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "sekrit") {
		t.Error("the API key reached the result")
	}
}

// TestTimeout: a request that runs past Config.Timeout is a timeout failure.
func TestTimeout(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 10 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 4, InputLen: 8, OutputLen: 100, Timeout: 150 * time.Millisecond,
		NoPreflight: true})
	if lv := res.Levels[0]; lv.Failures[macro.FailTimeout] != 4 || lv.Completed != 0 {
		t.Errorf("failures %v completed %d, want 4 timeouts", lv.Failures, lv.Completed)
	}
}

// TestRequestsRaisedToKeepConcurrency: a level of C needs at least 2×C
// requests to keep C in flight; fewer are raised, with a note.
func TestRequestsRaisedToKeepConcurrency(t *testing.T) {
	t.Parallel()
	emu, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Requests: 3, InputLen: 8, OutputLen: 5})
	lv := res.Levels[0]
	if lv.Completed != 8 || emu.State().Succeeded != 8+1 || !strings.Contains(strings.Join(lv.Notes, ";"), "raised from 3 to 8") {
		t.Errorf("completed %d, server %d, notes %q", lv.Completed, emu.State().Succeeded, lv.Notes)
	}
}

// TestDialThroughHost: Config.Dial opens every connection (as a
// remote.Host's DialContext does for a server bound to the GPU host).
func TestDialThroughHost(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	var mu sync.Mutex
	dials := 0
	d := &net.Dialer{}
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 4, InputLen: 8, OutputLen: 3,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			return d.DialContext(ctx, network, addr)
		}})
	mu.Lock()
	defer mu.Unlock()
	if res.Levels[0].Completed != 4 || dials == 0 {
		t.Errorf("completed %d with %d dials through Config.Dial", res.Levels[0].Completed, dials)
	}
}

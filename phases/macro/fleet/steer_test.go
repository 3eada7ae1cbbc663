package fleet

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// lockedBuf is a records writer read while the agents write to it: the
// agents' shared writer over a buffer.
type lockedBuf struct {
	lockedWriter
	b bytes.Buffer
}

func newLockedBuf() *lockedBuf {
	l := &lockedBuf{}
	l.w = &l.b
	return l
}

func (l *lockedBuf) lines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.b.Bytes(), []byte("\n"))
}

// The operator's pause reaches both agents mid-level (no request is sent
// while paused, and sending resumes), and the stop ends the level on both
// long before its 20 s: the level is kept, marked partial and paused, no
// later level runs, and no agent is left on either host.
func TestPauseAndStopReachEveryAgentMidLevel(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 3 * time.Millisecond, StepPerSeq: 1})
	ms, caches := members(t, 2)
	cfg := levelConfig(url, 0)
	cfg.Concurrency, cfg.Duration = []int{4, 8}, 20*time.Second
	out := newLockedBuf()
	cfg.JSONL = out
	e, err := NewEngine(cfg, ms)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *macro.Result, 1)
	go func() {
		res, err := e.Run(context.Background(), nil)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	sshtest.WaitFor(t, 15*time.Second, "requests from both agents", func() bool { return out.lines() > 40 })
	e.Pause()
	time.Sleep(time.Second) // the requests in flight finish
	n := out.lines()
	time.Sleep(1500 * time.Millisecond)
	if m := out.lines(); m != n {
		t.Fatalf("paused: %d requests ended after those in flight", m-n)
	}
	e.Resume()
	sshtest.WaitFor(t, 5*time.Second, "requests after the resume", func() bool { return out.lines() > n+20 })
	e.Stop()
	t0 := time.Now()
	var res *macro.Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the level ran on 10 s after the stop")
	}
	took := time.Since(t0)
	for _, c := range caches {
		noAgentLeft(t, c)
	}
	if len(res.Levels) != 1 || res.Stopped == "" {
		t.Fatalf("%d levels, stopped %q", len(res.Levels), res.Stopped)
	}
	lv := res.Levels[0]
	if !slices.ContainsFunc(lv.Notes, func(s string) bool { return strings.Contains(s, "partial: stopped by the operator mid-level") }) ||
		len(lv.Steered) != 1 || !strings.HasPrefix(lv.Steered[0], "paused ") || lv.Completed == 0 {
		t.Fatalf("notes %q, steered %q, completed %d", lv.Notes, lv.Steered, lv.Completed)
	}
	t.Logf("stopped %v after the stop, %d requests kept; steered %q", took.Round(time.Millisecond), lv.Completed, lv.Steered)
}

// The operator's live concurrency change reaches every agent mid-level, as
// a single sweep takes it: raised from 4 to 16 over two agents, the
// requests in flight the ticks sum climb past 4; lowered to 1, the sweep
// holds 2 (one stream per agent) and says so. The level notes each change
// once (not each agent's share) and ends at the concurrency it held, and
// the ticks carry the server's running requests an agent read.
func TestLiveConcurrencyReachesEveryAgent(t *testing.T) {
	url, ms, caches := agentsReadingMetrics(t)
	cfg := levelConfig(url, 0)
	cfg.Concurrency, cfg.Duration, cfg.OutputLen = []int{4}, 30*time.Second, 64
	e, err := NewEngine(cfg, ms)
	if err != nil {
		t.Fatal(err)
	}
	evs := make(chan phases.Event, 4096)
	done := make(chan *macro.Result, 1)
	go func() {
		res, err := e.Run(context.Background(), &phases.Emitter{Out: evs})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var last phases.MacroTick
	var running float64
	await := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for !ok() {
			select {
			case ev := <-evs:
				switch d := ev.Data.(type) {
				case phases.MacroTick:
					last = d
				case phases.ServerStats:
					running = max(running, d.Running)
				}
			case <-deadline:
				t.Fatalf("%s: last tick %+v", what, last)
			}
		}
	}
	await("4 in flight", func() bool { return last.InFlight >= 3 })
	e.SetConcurrency(16)
	await("16 in flight", func() bool { return last.InFlight > 8 && last.Concurrency == 16 })
	at16 := last.InFlight
	if running <= 4 {
		t.Errorf("the server's running requests, as an agent read them: at most %.0f at 16 in flight", running)
	}
	e.SetConcurrency(1)
	if c := e.Concurrency(); c != 2 {
		t.Fatalf("lowered to 1 over two agents: the sweep holds %d, not 2", c)
	}
	await("2 in flight", func() bool { return last.InFlight <= 2 && last.Concurrency == 2 })
	e.Stop()
	var res *macro.Result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the level ran on 20 s after the stop")
	}
	for _, c := range caches {
		noAgentLeft(t, c)
	}
	lv := res.Levels[0]
	var changes []string
	for _, n := range lv.Notes {
		if strings.Contains(n, "concurrency changed live") {
			changes = append(changes, n)
		}
	}
	if len(changes) != 2 || !strings.HasPrefix(changes[0], "concurrency changed live from 4 to 16 at ") ||
		!strings.HasPrefix(changes[1], "concurrency changed live from 16 to 2 at ") || len(lv.Steered) != 2 || lv.Concurrency != 2 {
		t.Fatalf("notes %q, steered %q, concurrency %d", lv.Notes, lv.Steered, lv.Concurrency)
	}
	t.Logf("steered %q; %d in flight at 16; server running up to %.0f", lv.Steered, at16, running)
}

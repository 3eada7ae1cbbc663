package fleet

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// lockedBuf is a records writer read while the agents write to it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
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
	var out lockedBuf
	cfg.JSONL = &out
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

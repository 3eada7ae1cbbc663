package onhost_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/selfbin"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// runLoad runs a profile window's load with opt for d, and on until the
// counts it has are enough (for 30 s more at most: a loaded machine starts
// the agent late), and reports the requests sent, ended and failed, and
// the load's error.
func runLoad(t *testing.T, opt onhost.Options, url string, d time.Duration, enough func(sent, ended, failed int64) bool) (sent, ended, failed int64, err error) {
	t.Helper()
	var s, e, f atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	spec := profile.LoadSpec{URL: url, API: "completions", Model: "test/model", Prompt: "one two three", Conc: 3, MaxTokens: 8}
	go func() {
		done <- onhost.ProfileLoad(opt)(ctx, spec, func() { s.Add(1) }, func(n int, err error) {
			switch {
			case err != nil:
				f.Add(1)
			case n == 8:
				e.Add(1)
			}
		})
	}()
	time.Sleep(d)
	for end := time.Now().Add(30 * time.Second); !enough(s.Load(), e.Load(), f.Load()) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the load did not stop within 10 s of its window's end")
	}
	return s.Load(), e.Load(), f.Load(), err
}

// threeEnded is enough for a load whose requests end: three of them.
func threeEnded(_, ended, _ int64) bool { return ended >= 3 }

// A profile window's load sent from the host (a child process here):
// requests go out and end with their tokens, and the window's end stops it
// with nothing left running.
func TestProfileLoadOnHost(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	opt := onhost.Options{Host: local.New(), Exe: os.Args[0]}
	if _, err := selfbin.Ensure(context.Background(), opt.Host, opt.Exe); err != nil {
		t.Fatal(err)
	}
	sent, ended, _, err := runLoad(t, opt, url, 1500*time.Millisecond, threeEnded)
	if err != nil || ended < 3 || sent < ended {
		t.Fatalf("sent %d, ended %d, err %v: want requests sent and ended", sent, ended, err)
	}
	ents, _ := os.ReadDir(cache + "/profdeck")
	for _, e := range ents {
		noAgentLeft(t, cache+"/profdeck/"+e.Name()+"/profdeck")
	}
}

// A server that refuses the requests: each stream's first request fails,
// and the host says so.
func TestProfileLoadOnHostFails(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{FailureRate: 1})
	sent, ended, failed, err := runLoad(t, onhost.Options{Host: simHost{local.New()}}, url, 500*time.Millisecond,
		func(_, _, failed int64) bool { return failed >= 3 })
	if ended != 0 || failed != 3 || sent != 3 {
		t.Fatalf("sent %d ended %d failed %d (err %v): want each of the 3 streams' first request failed", sent, ended, failed, err)
	}
}

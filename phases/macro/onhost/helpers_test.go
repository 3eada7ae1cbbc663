package onhost_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
)

// TestMain doubles as the agent: a copy of the test binary run as
// "loadgen-agent" serves one sweep, as profdeck itself does on a host.
func TestMain(m *testing.M) {
	if os.Getenv("PROFDECK_ONHOST_EMU") != "" {
		serveEmuChild()
	}
	if len(os.Args) > 1 && os.Args[1] == onhost.AgentCommand {
		if err := onhost.Serve(context.Background(), local.New(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// simHost is this machine standing in for a simulated host: the agent runs
// in this process.
type simHost struct{ remote.Host }

func (simHost) Simulated() bool { return true }
func (simHost) Name() string    { return "sim" }

// collector gathers a run's events.
type collector struct {
	ch   chan phases.Event
	mu   sync.Mutex
	evs  []phases.Event
	done chan struct{}
	seen chan string // each kind as it comes (never blocks: dropped when full)
}

func collect() *collector {
	c := &collector{ch: make(chan phases.Event, 64), done: make(chan struct{}), seen: make(chan string, 1024)}
	go func() {
		defer close(c.done)
		for ev := range c.ch {
			c.mu.Lock()
			c.evs = append(c.evs, ev)
			c.mu.Unlock()
			select {
			case c.seen <- ev.Kind:
			default:
			}
		}
	}()
	return c
}

func (c *collector) emitter() *phases.Emitter { return &phases.Emitter{Out: c.ch} }

// close ends the collection and returns the events.
func (c *collector) close() []phases.Event {
	close(c.ch)
	<-c.done
	return c.evs
}

// waitKind waits for an event of kind.
func (c *collector) waitKind(t *testing.T, kind string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case k := <-c.seen:
			if k == kind {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event within %v", kind, d)
		}
	}
}

func count(evs []phases.Event, kind string) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// finished is the run's PhaseFinished.
func finished(t *testing.T, evs []phases.Event) phases.PhaseFinished {
	t.Helper()
	for _, ev := range evs {
		if f, ok := ev.Data.(phases.PhaseFinished); ok {
			return f
		}
	}
	t.Fatal("no phase.finished event")
	return phases.PhaseFinished{}
}

// agentsRunning lists the processes running the program at path.
func agentsRunning(path string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if strings.TrimSuffix(exe, " (deleted)") == path {
			out = append(out, e.Name())
		}
	}
	return out
}

// noAgentLeft fails the test when a process still runs path a few seconds on.
func noAgentLeft(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := agentsRunning(path)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load generator still runs on the host after the sweep ended: pids %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweepConfig is a short sweep against url, complete: the sweep fills in
// no default.
func sweepConfig(url string, levels ...int) macro.Config {
	return macro.Config{URL: url, API: macro.APICompletions, Concurrency: levels, Requests: 8, Warmup: 1, InputLen: 16, OutputLen: 16,
		Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent, Seed: 7,
		Log: func(string) {}}
}

func levelsOf(res *macro.Result) string {
	if res == nil {
		return "no result"
	}
	var s []string
	for _, l := range res.Levels {
		s = append(s, fmt.Sprintf("C=%d %d ok", l.Concurrency, l.Completed))
	}
	return strings.Join(s, ", ")
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "profdeck-onhost-") }

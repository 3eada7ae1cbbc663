package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// runShares runs cfg once per share (shared: agent i of n), all at once,
// in this process, and returns each share's measured records.
func runShares(t *testing.T, cfg macro.Config, n int, share func(i int, mc *macro.Config)) [][]macro.Record {
	t.Helper()
	out := make([][]macro.Record, n)
	var wg sync.WaitGroup
	for i := range n {
		mc := cfg
		share(i, &mc)
		var buf bytes.Buffer
		mc.JSONL = &buf
		if err := macro.LoadWorkload(&mc); err != nil {
			t.Fatal(err)
		}
		sw, err := macro.NewSweep(mc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if _, err := sw.Run(context.Background(), nil); err != nil {
				t.Error(err)
			}
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var r macro.Record
				if json.Unmarshal(sc.Bytes(), &r) == nil && !r.Warmup {
					out[i] = append(out[i], r)
				}
			}
		})
	}
	wg.Wait()
	return out
}

func scheduleConfig(url string) macro.Config {
	cfg := levelConfig(url, 24)
	cfg.Concurrency, cfg.Rate, cfg.Arrivals, cfg.Burstiness, cfg.Warmup, cfg.NoPreflight = nil, 40, macro.ArrivalsPoisson, 0.5, 0, true
	return cfg
}

// Gamma arrivals are scheduled once and dealt to the agents: two agents'
// intended sends, together, are those of one client's schedule.
func TestGammaArrivalsDealtToAgents(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	cfg := scheduleConfig(url)
	if !Scheduled(cfg) {
		t.Fatal("gamma arrivals: not scheduled once")
	}
	one := runShares(t, cfg, 1, func(int, *macro.Config) {})[0]
	reqs := SplitClosed(cfg.Requests, 2)
	two := runShares(t, cfg, 2, func(i int, mc *macro.Config) { mc.Requests = reqs[i]; shared(i, 2, cfg, mc) })
	want := intended(one)
	if len(two[0])+len(two[1]) != len(want) || len(two[0]) == 0 || len(two[1]) == 0 {
		t.Fatalf("one client %d arrivals, two agents %d and %d", len(want), len(two[0]), len(two[1]))
	}
	// Each agent's clock starts at its own level's start: its arrivals
	// k, k+2, … are compared by their distance from its first.
	for k, recs := range two {
		got := intended(recs)
		for j := range got {
			if w := want[k+2*j] - want[k]; math.Abs(got[j]-got[0]-w) > 1e-3 {
				t.Fatalf("agent %d's arrival %d: %.4f s after its first, one client's %.4f s", k, j, got[j]-got[0], w)
			}
		}
	}
}

func intended(recs []macro.Record) []float64 {
	var out []float64
	for _, r := range recs {
		out = append(out, r.ScheduledS)
	}
	slices.Sort(out)
	return out
}

// Multi-turn sessions are dealt by session: two agents of one sweep start
// different sessions, and every turn of a session goes to one agent.
func TestSessionsDealtToAgents(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	cfg := levelConfig(url, 16)
	cfg.Concurrency, cfg.Warmup, cfg.NoPreflight = []int{1}, 0, true
	cfg.Dataset, cfg.DatasetFile, cfg.API = macro.DatasetSessions, "../testdata/sessions.jsonl", macro.APIChat
	two := runShares(t, cfg, 2, func(i int, mc *macro.Config) { mc.Requests = 8; shared(i, 2, cfg, mc) })
	owner := map[string]int{}
	for i, recs := range two {
		if len(recs) == 0 {
			t.Fatalf("agent %d sent nothing", i)
		}
		for _, r := range recs {
			if o, ok := owner[r.Session]; ok && o != i {
				t.Fatalf("session %s turn %d on agents %d and %d", r.Session, r.Turn, o, i)
			}
			owner[r.Session] = i
		}
	}
	if len(owner) < 2 {
		t.Fatalf("sessions %v: want each agent its own", owner)
	}
}

// A trace is replayed once, dealt by row: two agents send every row of
// the window between them, each row once, on the trace's own schedule.
func TestTraceDealtToAgents(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	cfg := levelConfig(url, 0)
	cfg.Concurrency, cfg.Warmup, cfg.NoPreflight, cfg.OutputLen, cfg.Arrivals, cfg.Burstiness = nil, 0, true, 4, macro.ArrivalsPoisson, 1
	cfg.Dataset, cfg.DatasetFile, cfg.TraceSpeed = "mooncake", "../testdata/trace_mooncake.jsonl", 20
	if !Scheduled(cfg) {
		t.Fatal("a trace: not scheduled once")
	}
	want := intended(runShares(t, cfg, 1, func(int, *macro.Config) {})[0])
	two := runShares(t, cfg, 2, func(i int, mc *macro.Config) { shared(i, 2, cfg, mc) })
	if len(two[0])+len(two[1]) != len(want) || len(two[1]) == 0 {
		t.Fatalf("one client %d rows, two agents %d and %d", len(want), len(two[0]), len(two[1]))
	}
	for k, recs := range two {
		got := intended(recs)
		for j := range got {
			if w := want[k+2*j] - want[k]; math.Abs(got[j]-got[0]-w) > 2e-3 {
				t.Fatalf("agent %d's row %d: %.4f s after its first, one client's %.4f s", k, j, got[j]-got[0], w)
			}
		}
	}
}

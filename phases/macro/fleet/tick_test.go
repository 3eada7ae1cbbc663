package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// A sweep over two agents emits a tick a second during its level, merged
// over the agents: their completed requests count the level's so far, as a
// single client's ticks do, up to the level's own count, and their output
// throughput is the agents' tokens per second, their requests in flight
// the agents' sum; the server's /metrics an agent read reach the ticks'
// reader too, and the level has the server's figures.
func TestEngineTicksMergeTheAgents(t *testing.T) {
	url, ms, _ := agentsReadingMetrics(t)
	cfg := levelConfig(url, 0)
	cfg.Concurrency, cfg.Duration = []int{4}, 3*time.Second
	e, err := NewEngine(cfg, ms)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan phases.Event, 1024)
	res, err := e.Run(context.Background(), &phases.Emitter{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	close(out)
	var ticks []phases.MacroTick
	scrapes := 0
	for ev := range out {
		if tk, ok := ev.Data.(phases.MacroTick); ok && ev.Kind == phases.KindMacroTick {
			ticks = append(ticks, tk)
		}
		if st, ok := ev.Data.(phases.ServerStats); ok && ev.Kind == phases.KindMacroServer && st.Available {
			scrapes++
		}
	}
	if scrapes == 0 {
		t.Error("no scrape of the server's /metrics passed on from an agent")
	}
	if len(ticks) < 2 {
		t.Fatalf("%d ticks over a 3 s level", len(ticks))
	}
	done, fast, busy := 0, 0, 0
	for _, tk := range ticks {
		if tk.InFlight > 4 {
			t.Errorf("a tick with %d in flight at concurrency 4", tk.InFlight)
		}
		if tk.InFlight >= 3 {
			busy++
		}
		if tk.Completed < done {
			t.Errorf("completed went back from %d to %d", done, tk.Completed)
		}
		done = tk.Completed
		if tk.OutputTokS > 0 && tk.TPOTp50ms > 0 {
			fast++
		}
		if tk.Concurrency != 4 {
			t.Errorf("a tick at concurrency %d, not 4", tk.Concurrency)
		}
	}
	if want := res.Levels[0].Completed; done != want || done == 0 {
		t.Errorf("the ticks completed %d requests, the level %d", done, want)
	}
	// The server's side, read by an agent through its sshd: the agents'
	// tokens over their windows agree with the server's.
	if sl := res.Levels[0].Server; sl == nil || !sl.Available || sl.WindowClientTokens <= 0 || !sl.TokensAgree {
		t.Errorf("the level's server figures: %+v", sl)
	} else {
		t.Logf("server %.0f tokens, agents %d over %.2f s", sl.WindowGenerationTokens, sl.WindowClientTokens, sl.WindowS)
	}
	if busy == 0 {
		t.Errorf("no tick with the agents' requests in flight: %+v", ticks)
	}
	if fast == 0 {
		t.Errorf("no tick with output tok/s and TPOT: %+v", ticks[0])
	}
}

// agentsReadingMetrics starts an emulator of 3 ms steps and two agents
// behind real sshds that read its /metrics, and returns its URL, the
// agents and their hosts' caches.
func agentsReadingMetrics(t *testing.T) (string, []Member, []string) {
	t.Helper()
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 3 * time.Millisecond, StepPerSeq: 1})
	ms, caches := members(t, 2)
	for i := range ms {
		ms[i].Opt.MetricsURL = url + "/metrics"
	}
	return url, ms, caches
}

// The live server figures come from the first agent in order that sends a
// scrape, as the merged level's do: a later agent's stand until an earlier
// one sends, and are left out after.
func TestTicksPassOnTheFirstAgentsScrapes(t *testing.T) {
	out := make(chan phases.Event, 16)
	tk := &ticker{em: &phases.Emitter{Out: out}}
	ctx := context.Background()
	em0, end0 := tk.agentEvents(ctx, 0, &sink{})
	em1, end1 := tk.agentEvents(ctx, 1, &sink{})
	send := func(em *phases.Emitter, running float64) {
		em.Emit(ctx, phases.KindMacroServer, &phases.ServerStats{Available: true, Running: running})
	}
	send(em1, 11)
	end1() // agent 1's scrape is through before agent 0 sends
	em1, end1 = tk.agentEvents(ctx, 1, &sink{})
	send(em0, 10)
	end0()
	send(em1, 12)
	end1()
	close(out)
	var got []float64
	for ev := range out {
		got = append(got, ev.Data.(phases.ServerStats).Running)
	}
	if len(got) != 2 || got[0] != 11 || got[1] != 10 {
		t.Errorf("scrapes passed on %v, want [11 10]: agent 1's until agent 0 sends, then agent 0's only", got)
	}
}

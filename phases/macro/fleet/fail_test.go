package fleet

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// One of two agents is killed mid-level: it is named as lost, the requests
// it finished before are kept, the level is partial, and Ctrl-C (the
// context cancelled) then leaves no agent on either host.
func TestAgentKilledMidLevelGivesPartial(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 3 * time.Millisecond, StepPerSeq: 1})
	ms, caches := members(t, 2)
	cfg := levelConfig(url, 0)
	cfg.Duration = 4 * time.Second
	go func() {
		sshtest.WaitFor(t, 10*time.Second, "gen2's agent", func() bool { return len(running(caches[1])) > 0 })
		time.Sleep(2500 * time.Millisecond) // past its first batches
		for _, p := range running(caches[1]) {
			pid, _ := strconv.Atoi(p)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	lv, err := RunClosed(context.Background(), cfg, 4, ms)
	if err != nil {
		t.Fatal(err)
	}
	note := lv.Note()
	if !lv.Partial || len(lv.Lost) != 1 || !strings.HasPrefix(lv.Lost[0], "gen2#1: ") || !strings.Contains(note, "partial: lost gen2#1: the load generator on host 127.0.0.1: command exited with status 137") {
		t.Fatalf("lost %v, note %q", lv.Lost, note)
	}
	if lv.OK == 0 || lv.Metrics["ttft"].Count != lv.OK {
		t.Fatalf("ok %d, ttft count %d", lv.OK, lv.Metrics["ttft"].Count)
	}
	if lv.Agents[1].OK == 0 {
		t.Fatalf("gen2#1 lost: none of its finished requests kept")
	}
	t.Logf("note: %s; %d requests kept, %d of them gen2#1's", note, lv.OK, lv.Agents[1].OK)
	for _, c := range caches {
		noAgentLeft(t, c)
	}
}

// Ctrl-C mid-level stops every agent and leaves none running.
func TestCancelStopsEveryAgent(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 3 * time.Millisecond, StepPerSeq: 1})
	ms, caches := members(t, 2)
	cfg := levelConfig(url, 0)
	cfg.Duration = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sshtest.WaitFor(t, 10*time.Second, "both agents", func() bool { return len(running(caches[0])) > 0 && len(running(caches[1])) > 0 })
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	t0 := time.Now()
	lv, _ := RunClosed(ctx, cfg, 4, ms)
	if took := time.Since(t0); took > 15*time.Second {
		t.Fatalf("the level ran %v after Ctrl-C", took)
	}
	for _, c := range caches {
		noAgentLeft(t, c)
	}
	// The note may go on to judge the agents' clients over what they sent
	// (a refill late at a loaded start): the stop is said first.
	if !lv.Partial || !lv.Stopped || len(lv.Lost) != 0 || !strings.HasPrefix(lv.Note(), "partial: stopped mid-level") {
		t.Fatalf("after Ctrl-C: lost %v, note %q", lv.Lost, lv.Note())
	}
	t.Logf("cancelled: ok %d, note %q", lv.OK, lv.Note())
}

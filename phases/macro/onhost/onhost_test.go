package onhost_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/selfbin"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// A sweep whose agent runs in this process (a simulated host) gives the
// same events and result as the engine run here: one start and one finish
// (the agent's own are not passed on), every level, the records.
func TestInProcessSweep(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	var jsonl bytes.Buffer
	cfg := sweepConfig(url, 1, 4)
	cfg.JSONL = &jsonl
	sw, err := onhost.New(cfg, onhost.Options{Host: simHost{local.New()}, MetricsURL: url + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sw.Run(ctx, col.emitter())
	evs := col.close()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 2 || res.Levels[1].Completed != 8 || res.Model != "test/model" {
		t.Fatalf("result: %s, model %q", levelsOf(res), res.Model)
	}
	// (Its warnings depend on the machine's load: a busy one bunches
	// the 2 ms chunks.)
	if res.Path == nil || res.Path.Kind != phases.PathHost || res.Path.Host != "sim" {
		t.Errorf("path %+v, want kind host on sim", res.Path)
	}
	if n, m := count(evs, phases.KindSessionPhaseStarted), count(evs, phases.KindSessionPhaseFinished); n != 1 || m != 1 {
		t.Errorf("%d starts and %d finishes, want one of each", n, m)
	}
	if p := evs[0].Data.(phases.PhaseStarted).Params.(map[string]any); p["loadgen"] != "host" {
		t.Errorf("start's params %v: no loadgen host", p)
	}
	if n := count(evs, phases.KindMacroLevel); n != 2 {
		t.Errorf("%d level events, want 2", n)
	}
	if count(evs, phases.KindMacroServer) == 0 {
		t.Error("no server figures came from the host's scrape")
	}
	if f := finished(t, evs); f.Outcome != phases.OutcomeDone {
		t.Errorf("finished %+v", f)
	}
	lines := 0
	sc := bufio.NewScanner(&jsonl)
	for sc.Scan() {
		var rec macro.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines < 16 {
		t.Errorf("%d per-request records, want at least 16", lines)
	}
}

// Stop and a lowered concurrency reach the sweep on the host.
func TestInProcessSteering(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	cfg := sweepConfig(url, 2, 4, 8)
	cfg.Requests, cfg.OutputLen = 40, 64
	sw, err := onhost.New(cfg, onhost.Options{Host: simHost{local.New()}})
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		col.waitKind(t, phases.KindMacroTick, 20*time.Second)
		sw.SetConcurrency(1)
		sw.Stop()
	}()
	res, err := sw.Run(ctx, col.emitter())
	col.close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "stopped by the operator" || len(res.Levels) != 1 {
		t.Fatalf("stopped %q after %s, want the first level only", res.Stopped, levelsOf(res))
	}
	if len(res.Levels[0].Notes) == 0 {
		t.Errorf("the level does not note the concurrency change: %+v", res.Levels[0])
	}
}

// Cancelling keeps what was measured: the finished levels come back with
// the cancel.
func TestInProcessCancelKeepsLevels(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	// Levels end after their requests (no duration): C=1 runs 4 requests
	// of 100 tokens at 2 ms (about 0.8 s), C=2 takes about 0.4 s, so the
	// cancel sent at C=1's end lands in the middle of C=2.
	cfg := sweepConfig(url, 1, 2)
	cfg.Requests, cfg.OutputLen = 4, 100
	sw, err := onhost.New(cfg, onhost.Options{Host: simHost{local.New()}})
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { col.waitKind(t, phases.KindMacroLevel, 20*time.Second); cancel() }()
	res, err := sw.Run(ctx, col.emitter())
	evs := col.close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want cancelled", err)
	}
	if res == nil || len(res.Levels) < 1 || res.Model != "test/model" {
		t.Fatalf("the finished level is lost, or the result is not the host's: %s", levelsOf(res))
	}
	if f := finished(t, evs); f.Outcome != phases.OutcomeCancelled {
		t.Errorf("finished %+v", f)
	}
}

// On this machine as a host the program is copied into the cache once,
// run as a child process, and found there the second time.
func TestLocalHostCopiesOnce(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	for i, wantCopied := range []bool{true, false} {
		sw, err := onhost.New(sweepConfig(url, 2), onhost.Options{Host: local.New(), Exe: os.Args[0]})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sw.Run(context.Background(), nil)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		in := sw.Install()
		if in == nil || in.Copied != wantCopied || !strings.HasPrefix(in.Path, filepath.Join(cache, "profdeck", in.Hash)) {
			t.Fatalf("run %d: install %+v, want copied=%v under %s", i, in, wantCopied, cache)
		}
		if len(res.Levels) != 1 || res.Levels[0].Completed != 8 {
			t.Fatalf("run %d: %s", i, levelsOf(res))
		}
		noAgentLeft(t, in.Path)
	}
}

// Cancelling a sweep on a host process keeps its levels (the agent's own
// result comes back) and leaves no process behind.
func TestLocalHostCancelLeavesNothing(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 5 * time.Millisecond, StepPerSeq: 1})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := sweepConfig(url, 1, 2)
	cfg.Requests, cfg.Duration = 0, time.Second
	sw, err := onhost.New(cfg, onhost.Options{Host: local.New(), Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		col.waitKind(t, phases.KindMacroLevel, 20*time.Second)
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	res, err := sw.Run(ctx, col.emitter())
	col.close()
	if !errors.Is(err, context.Canceled) || res == nil || len(res.Levels) < 1 || res.Levels[0].Completed == 0 || res.Model != "test/model" {
		t.Fatalf("err %v, levels %s: want the first level kept and a cancel", err, levelsOf(res))
	}
	noAgentLeft(t, sw.Install().Path)
}

// A host of another architecture is refused with one line before anything
// is copied.
func TestOtherPlatformIsBadInput(t *testing.T) {
	bin := t.TempDir()
	other := "aarch64"
	if runtime.GOARCH == "arm64" {
		other = "x86_64"
	}
	script := "#!/bin/sh\ncase \"$1\" in -s) echo Linux;; -m) echo " + other + ";; *) echo Linux;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "uname"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	sw, err := onhost.New(sweepConfig("http://127.0.0.1:1", 1), onhost.Options{Host: local.New(), Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sw.Run(context.Background(), nil)
	var ie *phases.InputError
	var pe *selfbin.PlatformError
	if !errors.As(err, &ie) || !errors.As(err, &pe) || !strings.Contains(err.Error(), other) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v: want one line of bad input naming %s", err, other)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("something was copied: %v", ents)
	}
}

// Bad settings are found before the host is touched.
func TestBadConfigBeforeHost(t *testing.T) {
	_, err := onhost.New(macro.Config{URL: "ftp://x"}, onhost.Options{Host: local.New()})
	if err == nil {
		t.Fatal("no error for a bad URL")
	}
	if _, err := onhost.NewEngine(sweepConfig("http://127.0.0.1:1", 1), "gpu", onhost.Options{Host: local.New()}); err == nil {
		t.Fatal("no error for --loadgen gpu")
	}
}

// A stop that comes while the agent waits for its start is kept: the
// sweep starts stopped, not with every level.
func TestStopBeforeTheStartIsKept(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	cfg := sweepConfig(url, 2, 4, 8)
	cfg.Requests = 40
	var sw *onhost.Sweep
	ready := make(chan struct{})
	sw, err := onhost.New(cfg, onhost.Options{Host: simHost{local.New()}, AwaitStart: true, OnReady: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-ready
		sw.Stop()
		sw.Start(time.Now())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sw.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "stopped by the operator" || len(res.Levels) > 1 {
		t.Fatalf("stopped %q after %s, want at most the first level", res.Stopped, levelsOf(res))
	}
}

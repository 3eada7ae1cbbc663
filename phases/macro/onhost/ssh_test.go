package onhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/selfbin"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
	buildDir  string
)

// profdeckBinary builds profdeck itself once for the package's tests: the
// program --loadgen host copies to the host.
func profdeckBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		built = filepath.Join(dir, "profdeck")
		out, err := exec.Command("go", "build", "-o", built, "github.com/profdeck/profdeck").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build profdeck: %v", buildErr)
	}
	return built
}

// sshSweepHost starts a real sshd whose sessions keep their cache in a
// directory of the test's, dials it, and serves an emulator on loopback.
func sshSweepHost(t *testing.T, step time.Duration) (*sshtest.Server, onhost.Options, string, string) {
	t.Helper()
	cache := t.TempDir()
	srv, h := sshhost.Dial(context.Background(), t, sshtest.Options{Env: []string{"XDG_CACHE_HOME=" + cache}})
	_, url := emutest.Start(t, vllmemu.Config{StepTime: step, StepPerSeq: 1})
	return srv, onhost.Options{Host: h, Exe: profdeckBinary(t), MetricsURL: url + "/metrics"}, url, cache
}

// Through a real sshd: profdeck is copied over SFTP into the host's cache
// the first time, found there the second, and the sweep's events come back.
func TestSSHHostSweepCopiesOnce(t *testing.T) {
	_, opt, url, cache := sshSweepHost(t, 2*time.Millisecond)
	for i, wantCopied := range []bool{true, false} {
		sw, err := onhost.New(sweepConfig(url, 1, 4), opt)
		if err != nil {
			t.Fatal(err)
		}
		col := collect()
		t0 := time.Now()
		res, err := sw.Run(context.Background(), col.emitter())
		evs := col.close()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		in := sw.Install()
		if in == nil || in.Copied != wantCopied || !strings.HasPrefix(in.Path, cache+"/profdeck/") {
			t.Fatalf("run %d: install %+v, want copied=%v into %s", i, in, wantCopied, cache)
		}
		t.Logf("run %d: %s; whole sweep %.1f s", i, strings.TrimSpace(installLine(in.Copied, in.Took)), time.Since(t0).Seconds())
		if len(res.Levels) != 2 || res.Levels[1].Completed != 8 || count(evs, phases.KindMacroLevel) != 2 {
			t.Fatalf("run %d: %s, %d level events", i, levelsOf(res), count(evs, phases.KindMacroLevel))
		}
		if p := res.Path; p == nil || p.Kind != phases.PathHost || p.Host != opt.Host.Name() || p.Copied != wantCopied || p.CopyS <= 0 {
			t.Fatalf("run %d: path %+v, want kind host on %s, copied %v, and the copy's time", i, res.Path, opt.Host.Name(), wantCopied)
		}
		t.Logf("run %d: path %+v", i, *res.Path)
		noAgentLeft(t, in.Path)
	}
}

func installLine(copied bool, took time.Duration) string {
	if copied {
		return "copied in " + took.Round(time.Millisecond).String()
	}
	return "cached, checked in " + took.Round(time.Millisecond).String()
}

// Cancelling (Ctrl-C, q) through sshd stops the sweep on the host: what it
// measured comes back and its process is gone.
func TestSSHCancelKeepsLevelsLeavesNothing(t *testing.T) {
	_, opt, url, _ := sshSweepHost(t, 5*time.Millisecond)
	cfg := sweepConfig(url, 1, 2)
	cfg.Requests, cfg.Duration = 0, time.Second
	sw, err := onhost.New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		col.waitKind(t, phases.KindMacroLevel, 30*time.Second)
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	res, err := sw.Run(ctx, col.emitter())
	evs := col.close()
	if !errors.Is(err, context.Canceled) || res == nil || len(res.Levels) < 1 || res.Model != "test/model" {
		t.Fatalf("err %v, %s: want the host's result with the first level, and a cancel", err, levelsOf(res))
	}
	if f := finished(t, evs); f.Outcome != phases.OutcomeCancelled {
		t.Errorf("finished %+v", f)
	}
	noAgentLeft(t, sw.Install().Path)
}

// A dropped connection (sshd killed) ends the sweep here with the levels
// that came back, and the agent on the host, its stdin gone, stops.
func TestSSHDroppedConnectionLeavesNothing(t *testing.T) {
	srv, opt, url, _ := sshSweepHost(t, 5*time.Millisecond)
	cfg := sweepConfig(url, 1, 2)
	cfg.Requests, cfg.Duration = 0, 2*time.Second
	sw, err := onhost.New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	col := collect()
	go func() {
		col.waitKind(t, phases.KindMacroLevel, 30*time.Second)
		time.Sleep(300 * time.Millisecond)
		srv.Stop()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sw.Run(ctx, col.emitter())
	evs := col.close()
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the lost connection", err)
	}
	if res == nil || len(res.Levels) != 1 || res.Stopped != "host lost" || !strings.Contains(strings.Join(res.Warnings, "\n"), "was lost after 1 finished level") {
		t.Fatalf("result %s, stopped %q, warnings %q", levelsOf(res), res.Stopped, res.Warnings)
	}
	if f := finished(t, evs); f.Outcome != phases.OutcomeFailed {
		t.Errorf("finished %+v", f)
	}
	t.Logf("error: %v", err)
	noAgentLeft(t, sw.Install().Path)
}

// A profile window's load from the host through a real sshd: requests end
// with their tokens, and the window's end leaves nothing running there.
func TestSSHProfileLoad(t *testing.T) {
	_, opt, url, cache := sshSweepHost(t, time.Millisecond)
	// Copied first, so the window's two seconds are the load's.
	if _, err := selfbin.Ensure(context.Background(), opt.Host, opt.Exe); err != nil {
		t.Fatal(err)
	}
	sent, ended, _, err := runLoad(t, opt, url, 2*time.Second, threeEnded)
	if err != nil || ended < 3 || sent < ended {
		t.Fatalf("sent %d, ended %d, err %v", sent, ended, err)
	}
	ents, _ := filepath.Glob(cache + "/profdeck/*/profdeck")
	if len(ents) != 1 {
		t.Fatalf("the cache holds %v", ents)
	}
	noAgentLeft(t, ents[0])
}

// An agent that ignores the end of its stdin and TERM (a host too busy to
// answer, say) is killed with its whole process group 2 s after the
// cancel: nothing of it is left on the host.
func TestSSHUnresponsiveAgentIsKilled(t *testing.T) {
	_, opt, url, _ := sshSweepHost(t, time.Millisecond)
	marker := fmt.Sprint(900 + time.Now().UnixNano()%99)
	opt.Exe = filepath.Join(t.TempDir(), "stuck")
	script := "#!/bin/sh\ntrap '' TERM\nsleep " + marker + ".5 &\nwait\n"
	if err := os.WriteFile(opt.Exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sw, err := onhost.New(sweepConfig(url, 1), opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sshtest.WaitFor(t, 30*time.Second, "the stuck agent's sleep", func() bool { return len(sleeping(marker)) > 0 })
		cancel()
	}()
	t0 := time.Now()
	_, err = sw.Run(ctx, nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "did not send its result") {
		t.Fatalf("err %v", err)
	}
	sshtest.WaitFor(t, 10*time.Second, "the stuck agent's group to be killed", func() bool { return len(sleeping(marker)) == 0 })
	t.Logf("killed %.1f s after the cancel", time.Since(t0).Seconds())
}

// sleeping lists the processes running "sleep MARKER.5".
func sleeping(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "sleep\x00"+marker+".5") {
			out = append(out, e.Name())
		}
	}
	return out
}

package load_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// launchAndFollow starts launch on h and follows its load with a stall
// threshold of an hour, for at most limit: the ending, the error, the
// events and how long it took.
func launchAndFollow(t *testing.T, h remote.Host, dir, launch string, limit time.Duration) (load.Ending, error, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit+20*time.Second)
	defer cancel()
	logPath := filepath.Join(dir, "logs", "server.log")
	s := &load.Server{Host: h, StopTimeout: 10 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{Launch: launch, Log: logPath}}
	if _, err := s.Start(ctx, nil, nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		// The launch's process group, not Server.Stop: with its pid gone
		// Stop stops any `vllm serve` by name, and the launches of the
		// tests running beside this one have those words in their
		// command lines.
		if pid := s.PID(context.Background()); pid > 0 {
			remote.Output(context.Background(), h, fmt.Sprintf("kill -TERM -%d 2>/dev/null || true", pid))
		}
	})
	var evs eventLog
	w := load.NewWatcher(load.Complete(load.Config{Host: h, LogPath: logPath, PIDFile: logPath + ".pid", StallAfter: time.Hour,
		HealthURL: load.HealthURL(fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))), Poll: 200 * time.Millisecond, NoDiagnosis: true}))
	wctx, wcancel := context.WithTimeout(ctx, limit)
	defer wcancel()
	t0 := time.Now()
	end, err := w.Until(wctx, evs.emitter(t))
	took := time.Since(t0)
	time.Sleep(100 * time.Millisecond) // the last events reach the log
	return end, err, evs.text(), took
}

// exitCases: launches that die at once are failed loads within seconds,
// with the log's last lines (secrets scrubbed); a launch whose first
// process exits while the rest of its process group runs is not.
func exitCases(t *testing.T, h remote.Host, python string) {
	t.Run("typo", func(t *testing.T) {
		end, err, evs, took := launchAndFollow(t, h, t.TempDir(), "cd /no/such/dir-4471 && vllm serve m", 30*time.Second)
		if err != nil || end.Kind != load.EndFailed || !strings.Contains(end.Reason, "exited during its load") ||
			!strings.Contains(end.Reason, "/no/such/dir-4471") {
			t.Fatalf("after %s: %+v %v, want a failed load naming the exit and the log's last line", took, end, err)
		}
		if took > 15*time.Second {
			t.Errorf("the exit took %s to report", took)
		}
		if !strings.Contains(evs, "load.failure") || !strings.Contains(evs, "exited") {
			t.Errorf("no exit event:\n%s", evs)
		}
	})
	t.Run("argument error", func(t *testing.T) {
		script := `import sys, time
time.sleep(0.5)
print("INFO 12-01 10:00:00 [utils.py:1] non-default args: {'model': 'm', 'api_key': ['PlantedList8830'], 'hf_token': 'hf_PlantedTail5521'}", flush=True)
print("usage: vllm serve [model_tag] [options]", file=sys.stderr)
print("vllm serve: error: unrecognized arguments: --tensor-parallel-sise 8", file=sys.stderr)
sys.exit(2)`
		end, err, evs, _ := launchAndFollow(t, h, t.TempDir(), remote.Quote(python)+" -c "+remote.Quote(script), 30*time.Second)
		if err != nil || end.Kind != load.EndFailed || !strings.Contains(end.Reason, "unrecognized arguments: --tensor-parallel-sise") {
			t.Fatalf("%+v %v\n%s", end, err, evs)
		}
		if !strings.Contains(evs, "usage: vllm serve") {
			t.Errorf("the failure does not carry the log's last lines:\n%s", evs)
		}
		if strings.Contains(evs, "hf_PlantedTail5521") || strings.Contains(evs, "PlantedList8830") {
			t.Errorf("the last lines show a token or a key:\n%s", evs)
		}
	})
	t.Run("group lives on", func(t *testing.T) {
		// The launched shell exits at once; the process it left in the
		// background is the server, and it runs.
		end, err, evs, _ := launchAndFollow(t, h, t.TempDir(), "echo starting; sleep 30 & exit 0", 4*time.Second)
		if end.Kind != "" || err == nil {
			t.Fatalf("%+v %v: a running process group was taken for an exit\n%s", end, err, evs)
		}
	})
}

func TestLaunchExitLocal(t *testing.T) {
	t.Parallel()
	needTool(t, "bash")
	exitCases(t, local.New(), needTool(t, "python3"))
}

func TestLaunchExitSSH(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	python := sshhost.Python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, h := sshhost.Dial(ctx, t, sshtest.Options{})
	exitCases(t, h, python)
}

// A pid file left by a server that died long ago, beside a log another
// server writes, is stale: no exit is reported for it.
func TestStalePIDFileIsNoExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "server.log")
	if err := os.WriteFile(logPath+".pid", []byte("999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(logPath+".pid", old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte("(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.21.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var evs eventLog
	w := load.NewWatcher(load.Complete(load.Config{Host: local.New(), LogPath: logPath, PIDFile: logPath + ".pid", StallAfter: time.Hour,
		Poll: 200 * time.Millisecond, NoDiagnosis: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	end, err := w.Until(ctx, evs.emitter(t))
	if end.Kind != "" || err == nil {
		t.Fatalf("%+v %v: a stale pid file was taken for an exit", end, err)
	}
	if strings.Contains(evs.text(), phases.KindLoadFailure) {
		t.Errorf("a failure was reported:\n%s", evs.text())
	}
}

// In the cockpit's follow (Run, until the context ends), a load that
// failed is one run in the journal: it is not opened and failed again at
// every poll.
func TestFailedLoadIsOneRun(t *testing.T) {
	t.Parallel()
	needTool(t, "bash")
	h := local.New()
	logPath := filepath.Join(t.TempDir(), "server.log")
	s := &load.Server{Host: h, StopTimeout: 5 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{Launch: "echo bad flag; exit 2", Log: logPath}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Start(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 4096)
	w := load.NewWatcher(load.Complete(load.Config{Host: h, LogPath: logPath, PIDFile: logPath + ".pid", StallAfter: time.Hour,
		Poll: 200 * time.Millisecond, NoDiagnosis: true}))
	rctx, rcancel := context.WithTimeout(ctx, 6*time.Second)
	defer rcancel()
	if err := w.Run(rctx, &phases.Emitter{Out: ch}); err != nil {
		t.Fatal(err)
	}
	close(ch)
	var started, failed int
	for ev := range ch {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			started++
		case phases.PhaseFinished:
			if d.Outcome == phases.OutcomeFailed {
				failed++
			}
		}
	}
	if started != 1 || failed != 1 {
		t.Errorf("%d load runs started and %d failed, want one of each", started, failed)
	}
}

package load_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// needTool skips when a tool is missing, except under CI where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// lifecycle runs start → follow to ready → stop → restart with the profiler
// → stop against a host, with a fake vLLM server script already on it.
func lifecycle(t *testing.T, h remote.Host, python, script, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	port := sshtest.FreePort(t)
	logPath := filepath.Join(dir, "logs", "server.log")
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	s := &load.Server{Host: h, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{
		Launch: fmt.Sprintf("%s %s %d 0.4", remote.Quote(python), remote.Quote(script), port), Log: logPath}}
	pid, err := s.Start(ctx, nil, nil)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	w := load.NewWatcher(load.Complete(load.Config{Host: h, LogPath: logPath, HealthURL: load.HealthURL(url), Poll: 200 * time.Millisecond}))
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	end, err := w.Until(wctx, nil)
	wcancel()
	if err != nil || end.Kind != load.EndReady {
		b, _ := h.ReadFile(ctx, logPath)
		t.Fatalf("until: %+v %v\nlog:\n%s", end, err, b)
	}
	if got, alive := s.Running(ctx); got != pid || !alive {
		t.Fatalf("running = %d %v, started %d", got, alive, pid)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, alive := s.Running(ctx); alive {
		t.Fatal("still alive after stop")
	}
	// Neither this Server nor a later profdeck takes a pid of a stopped
	// server for its own.
	if p := s.PID(ctx); p != 0 {
		t.Errorf("PID after stop = %d, want 0", p)
	}
	if p := (&load.Server{Host: h, Settings: s.Settings}).PID(ctx); p != 0 {
		t.Errorf("the pid file names %d after stop, want none", p)
	}
	// The server outlived the command that started it, and now it is gone:
	// its port answers no more.
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Error("the port still answers after stop")
	}
	flags, env := load.ProfilerArgs("0.12.0", filepath.Join(dir, "prof dir"))
	if _, err := s.Restart(ctx, flags, env); err != nil {
		t.Fatalf("restart: %v", err)
	}
	w2 := load.NewWatcher(load.Complete(load.Config{Host: h, LogPath: logPath, HealthURL: load.HealthURL(url), Poll: 200 * time.Millisecond}))
	wctx, wcancel = context.WithTimeout(ctx, 20*time.Second)
	end, err = w2.Until(wctx, nil)
	wcancel()
	if err != nil || end.Kind != load.EndReady {
		t.Fatalf("until after restart: %+v %v", end, err)
	}
	b, err := h.ReadFile(ctx, logPath)
	if err != nil || !strings.Contains(string(b), "Profiler with mode 'torch' is enabled") {
		t.Errorf("the restarted server has no profiler (VLLM_TORCH_PROFILER_DIR):\n%s %v", b, err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

// The lifecycle against this machine, with a real detached process and a
// real HTTP /health.
func TestServerLifecycleLocal(t *testing.T) {
	t.Parallel()
	python := needTool(t, "python3")
	script, err := filepath.Abs("testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	lifecycle(t, local.New(), python, script, t.TempDir())
}

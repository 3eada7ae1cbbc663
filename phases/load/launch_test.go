package load_test

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
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// The planted values of the launch's environment: one whose name looks
// secret, one whose name does not.
const (
	plantedToken = "hf_PlantedLaunch4471"
	plantedPlain = "PlantedPlain9012"
)

// eventLog keeps the events an Emitter sends.
type eventLog struct {
	mu  sync.Mutex
	evs []phases.Event
}

func (l *eventLog) emitter(t *testing.T) *phases.Emitter {
	ch := make(chan phases.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(ch); <-done })
	return &phases.Emitter{Out: ch}
}

func (l *eventLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ev := range l.evs {
		fmt.Fprintf(&b, "%s %+v\n", ev.Kind, ev.Data)
	}
	return b.String()
}

// commandLines are the command lines of every process of this machine (the
// sshd's sessions run here too), as ps shows them.
func commandLines(t *testing.T) string {
	t.Helper()
	ms, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range ms {
		if c, err := os.ReadFile(m); err == nil {
			b.WriteString(strings.ReplaceAll(string(c), "\x00", " ") + "\n")
		}
	}
	return b.String()
}

// launchAsOneCommand checks a launch of several commands on h: `cd DIR &&
// …; …; source ./activate && exec fake-vllm`. Every command sees the whole
// environment; no process's command line shows a value of it; the file it
// waited in is gone; the restart with the profiler's variable reaches the
// server behind `source … &&`; the events name the variables, never their
// values.
func launchAsOneCommand(t *testing.T, h remote.Host, python, script, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opt := filepath.Join(dir, "opt dir")
	if err := os.MkdirAll(opt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(opt, "activate"), []byte("PD_ACTIVATED=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := sshtest.FreePort(t)
	logPath := filepath.Join(dir, "logs", "server.log")
	launch := fmt.Sprintf(`cd %s && printf '%%s\n' "$PD_TOKEN" > one.txt; printf '%%s|%%s\n' "$PD_TOKEN" "$PD_PLAIN" > two.txt; source ./activate && exec %s %s %d 0.4`,
		remote.Quote(opt), remote.Quote(python), remote.Quote(script), port)
	var evs eventLog
	s := &load.Server{Host: h, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2, Emitter: evs.emitter(t), Settings: load.Settings{
		Launch: launch, Log: logPath, Env: map[string]string{"PD_TOKEN": plantedToken, "PD_PLAIN": plantedPlain}}}
	defer s.Stop(context.Background())
	follow := func(what string) {
		t.Helper()
		w := load.NewWatcher(load.Complete(load.Config{Host: h, LogPath: logPath, PIDFile: logPath + ".pid",
			HealthURL: load.HealthURL(fmt.Sprintf("http://127.0.0.1:%d", port)), Poll: 200 * time.Millisecond}))
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		end, err := w.Until(wctx, nil)
		if err != nil || end.Kind != load.EndReady {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s: %+v %v\nlog:\n%s", what, end, err, b)
		}
	}
	if _, err := s.Start(ctx, nil, nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	follow("start")
	for name, want := range map[string]string{"one.txt": plantedToken + "\n", "two.txt": plantedToken + "|" + plantedPlain + "\n"} {
		if b, err := os.ReadFile(filepath.Join(opt, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q: the variables did not reach every command", name, b, err, want)
		}
	}
	if ps := commandLines(t); strings.Contains(ps, plantedToken) || strings.Contains(ps, plantedPlain) {
		t.Errorf("a command line shows a value of the launch's environment")
	}
	if _, err := os.Stat(logPath + ".env"); !os.IsNotExist(err) {
		t.Errorf("the environment file is still there: %v", err)
	}
	flags, env := load.ProfilerArgs("0.12.0", filepath.Join(dir, "prof"))
	if _, err := s.Restart(ctx, flags, env); err != nil {
		t.Fatalf("restart: %v", err)
	}
	follow("restart")
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "Profiler with mode 'torch' is enabled") {
		t.Errorf("the restart behind `source … &&` has no profiler:\n%s", b)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	shown := evs.text()
	if strings.Contains(shown, plantedToken) || strings.Contains(shown, plantedPlain) || strings.Contains(shown, filepath.Join(dir, "prof")) {
		t.Errorf("the events show a value of the environment:\n%s", shown)
	}
	for _, name := range []string{"PD_TOKEN", "PD_PLAIN", "VLLM_TORCH_PROFILER_DIR"} {
		if !strings.Contains(shown, name) {
			t.Errorf("the events never name %s:\n%s", name, shown)
		}
	}
}

func TestLaunchAsOneCommandLocal(t *testing.T) {
	t.Parallel()
	needTool(t, "bash")
	python := needTool(t, "python3")
	script, err := filepath.Abs("testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	launchAsOneCommand(t, local.New(), python, script, t.TempDir())
}

func TestLaunchAsOneCommandSSH(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	python := sshhost.Python(t)
	script, err := filepath.Abs("testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, h := sshhost.Dial(ctx, t, sshtest.Options{})
	launchAsOneCommand(t, h, python, script, t.TempDir())
}

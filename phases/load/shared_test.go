package load_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// A GPU host shared with others: a stop signals only the process the
// launch started, checked before each signal; nothing is stopped by name.

// stopper is a Server whose pid file is pidFile, with the events of its
// steps kept.
func stopper(h remote.Host, pidFile string) (*load.Server, chan phases.Event) {
	ch := make(chan phases.Event, 64)
	return &load.Server{Host: h, PIDFile: pidFile, StopTimeout: 10 * time.Second, ReleasedBelowGiB: 2,
		Settings: load.Settings{Launch: "vllm serve m", Log: pidFile + ".log"}, Emitter: &phases.Emitter{Out: ch}}, ch
}

// details joins the server events' details so far.
func details(ch chan phases.Event) string {
	var b strings.Builder
	for {
		select {
		case ev := <-ch:
			if d, ok := ev.Data.(phases.ServerEvent); ok {
				b.WriteString(d.Action + ": " + d.Detail + "\n")
			}
		default:
			return b.String()
		}
	}
}

// started starts cmd in its own session, reaps it when it exits, and
// kills it when the test ends.
func started(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() // reaped as soon as it exits
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd.Process.Pid
}

func aliveProc(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// startTicks is pid's start time from /proc, as a launch records it.
func startTicks(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	return f[19]
}

// A pid file naming a process profdeck did not launch (an unrelated
// `setsid sleep` of the same user: a pid alone, the pid with another
// start time, the pid without the launch's mark) gets no signal.
func TestStopLeavesProcessNotLaunched(t *testing.T) {
	needTool(t, "setsid")
	pid := started(t, exec.Command("sleep", "60"))
	pf := filepath.Join(t.TempDir(), "server.log.pid")
	for _, rec := range []string{
		strconv.Itoa(pid),
		fmt.Sprintf("%d 12345 0123456789abcdef01234567", pid),
		fmt.Sprintf("%d %s 0123456789abcdef01234567", pid, startTicks(t, pid)),
	} {
		os.WriteFile(pf, []byte(rec+"\n"), 0o600)
		s, ch := stopper(local.New(), pf)
		err := s.Stop(context.Background())
		if err == nil || !strings.Contains(err.Error(), "not signalled") {
			t.Errorf("pid file %q: stop %v, want the pid refused", rec, err)
		}
		if _, alive := s.Running(context.Background()); alive {
			t.Errorf("pid file %q: an unrelated process reads as the server", rec)
		}
		if !aliveProc(pid) {
			t.Fatalf("pid file %q: the unrelated sleep was killed\n%s", rec, details(ch))
		}
	}
}

// The launch's process is stopped; no nvidia-smi on the host: the stop
// says the GPU memory was not measured, never that it was released.
func TestStopLaunchedNotMeasured(t *testing.T) {
	dir := t.TempDir()
	s, ch := stopper(local.New(), filepath.Join(dir, "server.log.pid"))
	s.Settings = load.Settings{Launch: "sleep 60", Log: filepath.Join(dir, "server.log")}
	t.Setenv("PATH", "/usr/bin:/bin")
	pid, err := s.Start(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v\n%s", err, details(ch))
	}
	if aliveProc(pid) {
		t.Fatal("the launched process still runs")
	}
	got := details(ch)
	if strings.Contains(got, "released") || !strings.Contains(got, "not measured") {
		t.Fatalf("events:\n%s\nwant the GPU memory not measured, not released", got)
	}
}

// Two users on a real sshd: the other user's `vllm serve` survives a stop
// that finds no server of ours, and the stop names it (pid, user, command).
func TestOtherUsersVllmServeSurvives(t *testing.T) {
	other := sshtest.OtherUser(t)
	dir, err := os.MkdirTemp("", "pd-other-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	// The other user's server: a shell whose command line is `vllm serve`.
	cmd := other.Cmd(exec.Command("/bin/sh", "-c", "sleep 60; : vllm serve m"))
	pid := started(t, cmd)
	smi := filepath.Join(dir, "nvidia-smi")
	os.WriteFile(smi, []byte(fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *compute-apps*) echo %d;; *) echo '0, NVIDIA H200, 75000, 143771, 0';; esac\n", pid)), 0o755)
	_, h := sshhost.Dial(context.Background(), t, sshtest.Options{Env: []string{"PATH=" + dir + ":/usr/bin:/bin"}})
	s, ch := stopper(h, filepath.Join(t.TempDir(), "server.log.pid"))
	err = s.Stop(context.Background())
	if !aliveProc(pid) {
		t.Fatalf("the other user's vllm serve was stopped\n%s", details(ch))
	}
	if err == nil {
		t.Fatal("stop with no server of ours: no error")
	}
	for _, want := range []string{"no server to stop", fmt.Sprintf("pid %d (%s)", pid, other.Name), "vllm serve m"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stop: %v\nwant it to name %q", err, want)
		}
	}
	if err := s.StopPID(context.Background(), pid); err == nil || !aliveProc(pid) || !strings.Contains(err.Error(), "owned by uid") {
		t.Errorf("--stop-pid of another user's process: %v (alive %v), want it refused", err, aliveProc(pid))
	}
}

// pidOneEnv makes the test binary the helper that stops a server whose
// pid file says 1, inside a PID namespace.
const pidOneEnv = "PROFDECK_TEST_PIDONE"

// A pid file that says 1, inside a PID namespace (where, as on a host
// run as root, kill -TERM -1 reaches every process): the stop refuses
// it, and the namespace's other process (a sleep) and the stopper live.
func TestPidOneNeverSignalled(t *testing.T) {
	if os.Getenv(pidOneEnv) != "" {
		pidOneHelper(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: a PID namespace (unshare --pid) needs root; CI runs it as root")
	}
	needTool(t, "unshare")
	pf := filepath.Join(t.TempDir(), "server.log.pid")
	script := `sleep 30 & s=$!; "$0" -test.run='^TestPidOneNeverSignalled$' -test.count=1; rc=$?; kill -0 $s && echo SLEEP-LIVES; exit $rc`
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), pidOneEnv+"="+pf)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SLEEP-LIVES") || !strings.Contains(string(out), "REFUSED") {
		t.Fatalf("stop of pid 1 in a PID namespace: %v\n%s", err, out)
	}
}

func pidOneHelper(t *testing.T) {
	pf := os.Getenv(pidOneEnv)
	for _, rec := range []string{"1", "1 1 0123456789abcdef01234567"} {
		os.WriteFile(pf, []byte(rec+"\n"), 0o600)
		s, _ := stopper(local.New(), pf)
		err := s.Stop(context.Background())
		if err == nil || !strings.Contains(err.Error(), "not signalled") {
			t.Fatalf("pid file %q: stop %v, want pid 1 refused", rec, err)
		}
	}
	fmt.Println("REFUSED")
}

// A link planted at the server's log is never written through: the
// launch's output goes to a new file, the link's target is untouched; the
// environment file (its secrets) goes to the private work dir, made 0700.
func TestLaunchNotThroughPlantedLog(t *testing.T) {
	dir := sshtest.SharedDir(t)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	logPath := filepath.Join(dir, "server.log")
	os.Symlink(victim, logPath)
	work := filepath.Join(dir, "work-{uid}")
	s, ch := stopper(local.New(), logPath+".pid")
	s.Settings = load.Settings{Launch: "echo launched; sleep 60", Log: logPath, WorkDir: work,
		Env: map[string]string{"HF_TOKEN": "hf_secret"}}
	if _, err := s.Start(context.Background(), nil, nil); err != nil {
		t.Fatalf("start: %v\n%s", err, details(ch))
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	sshtest.WaitFor(t, 5*time.Second, "the launch's output in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "launched")
	})
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the planted link's target reads %q", b)
	}
	if st, err := os.Lstat(logPath); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the log is not a file of its own: %v %v", st.Mode(), err)
	}
	mine := strings.Replace(work, "{uid}", strconv.Itoa(os.Getuid()), 1)
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the work dir %s: %v, want a folder of mode 0700", mine, err)
	}
}

// --stop-pid: with no launch of profdeck's, Stop ends the process of the
// user's the operator named, and only that one.
func TestStopGivenPID(t *testing.T) {
	given := started(t, exec.Command("sleep", "60"))
	bystander := started(t, exec.Command("sleep", "60"))
	s, ch := stopper(local.New(), filepath.Join(t.TempDir(), "server.log.pid"))
	s.GivenPID = given
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("stop --stop-pid %d: %v\n%s", given, err, details(ch))
	}
	sshtest.WaitFor(t, 5*time.Second, "the given pid to exit", func() bool { return !aliveProc(given) })
	if !aliveProc(bystander) {
		t.Fatal("a process not named was stopped")
	}
}

// The profiler's directory another user made first (traces of theirs
// would be read as this server's): the restart with the profiler is bad
// input naming it, and nothing is launched.
func TestProfilerDirOfOtherUserRefused(t *testing.T) {
	other := sshtest.OtherUser(t)
	dir := sshtest.SharedDir(t)
	prof := filepath.Join(dir, "vllm_profile")
	other.Mkdir(t, prof)
	s, _ := stopper(local.New(), filepath.Join(dir, "server.log.pid"))
	s.Settings = load.Settings{Launch: "sleep 60", Log: filepath.Join(dir, "server.log"), ProfilerDir: prof}
	_, err := s.Start(context.Background(), nil, map[string]string{"VLLM_TORCH_PROFILER_DIR": prof})
	var ie *phases.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), prof) || !strings.Contains(err.Error(), "server.profiler_dir") {
		t.Fatalf("start with another user's profiler dir: %v; want bad input naming it and the fix", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.log.pid")); err == nil {
		t.Fatal("the server was launched")
	}
}

// The profiler's per-user folder (through a real sshd, another user's
// folder of the old shared name beside it): the launch's --profiler-config
// names the folder with {uid} as the host's uid, made 0700, never the
// other user's.
func TestProfilerDirPerUser(t *testing.T) {
	other := sshtest.OtherUser(t)
	dir := sshtest.SharedDir(t)
	theirs := filepath.Join(dir, "vllm_profile")
	other.Mkdir(t, theirs)
	_, h := sshhost.Dial(context.Background(), t, sshtest.Options{})
	out := filepath.Join(dir, "args")
	prof := filepath.Join(dir, "vllm_profile-"+remote.UID)
	s, _ := stopper(h, filepath.Join(dir, "server.log.pid"))
	s.Settings = load.Settings{Launch: "printf '%s\\n' > " + out, Log: filepath.Join(dir, "server.log"), ProfilerDir: prof}
	flags, env := load.ProfilerArgs("0.13.0", prof)
	if _, err := s.Start(context.Background(), flags, env); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "vllm_profile-"+strconv.Itoa(os.Getuid()))
	want := fmt.Sprintf(`{"profiler":"torch","torch_profiler_dir":%q}`, mine)
	var got []byte
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !strings.Contains(string(got), "\n{"); time.Sleep(50 * time.Millisecond) {
		got, _ = os.ReadFile(out)
	}
	if !strings.Contains(string(got), want+"\n") {
		t.Fatalf("the launch's arguments: %q, want %s", got, want)
	}
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, want a folder of mode 0700", mine, err)
	}
}

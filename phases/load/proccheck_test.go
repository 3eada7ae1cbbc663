package load

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/local"
)

// procCheckAt runs procCheckCmd on the local host for a pid file naming pid.
func procCheckAt(t *testing.T, pid int) procState {
	t.Helper()
	dir := t.TempDir()
	pf, lf := filepath.Join(dir, "server.log.pid"), filepath.Join(dir, "server.log")
	if err := os.WriteFile(pf, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lf, []byte("starting\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &Watcher{cfg: Config{Host: local.New(), PIDFile: pf, LogPath: lf}}
	w.loading.Store(true)
	return w.procCheck(ctx)
}

// The launched process before its setsid is in its parent's process group:
// no process has its pid as group yet, and it is alive all the same (on a
// loaded host the first poll can come that early). Once it has exited, and
// no process is left in a group of its pid, it is dead.
func TestProcCheckLaunchBeforeSetsid(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if pg, err := syscall.Getpgid(pid); err != nil || pg == pid {
		t.Fatalf("the test process leads its own group (%d, %v)", pg, err)
	}
	if st := procCheckAt(t, pid); !st.known || !st.alive {
		t.Errorf("a running launch not yet in its own group: %+v, want alive", st)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if st := procCheckAt(t, pid); !st.known || st.alive {
		t.Errorf("an exited launch: %+v, want dead", st)
	}
}

// A group seen gone once and alive at the next look (its last process
// forked a child and exited while /proc was read) is no exit; gone on two
// looks in a row is, from the first.
func TestExitNeedsTwoLooks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	gone := procState{known: true, pid: 42, pidAt: 990, logAt: 995}
	alive := gone
	alive.alive = true
	s := &run{tr: &Tracker{}}
	s.proc(t0, gone)
	s.proc(t0.Add(time.Second), alive)
	s.proc(t0.Add(2*time.Second), gone)
	if s.exit != nil {
		t.Fatalf("one look at a gone group, then alive, then one look: taken for an exit at %v", s.exit.at)
	}
	s.proc(t0.Add(3*time.Second), gone)
	if s.exit == nil || !s.exit.at.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("gone on two looks: %+v, want an exit from the first of them", s.exit)
	}
}

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

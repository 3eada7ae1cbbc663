package sshtest

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// OtherUserName is the second Unix user the shared-host tests create: the
// one who plants files and runs processes the user under test must not
// trust or stop.
const OtherUserName = "pdother"

// Other is that user.
type Other struct {
	Name     string
	UID, GID int
}

var otherOnce sync.Once

// OtherUser creates the second user (once per test binary, kept for the
// next run) and returns it. Creating a user takes root: the test is
// skipped, saying so, when it runs as another user; CI runs as root.
func OtherUser(t testing.TB) Other {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: this test needs root, to create a second Unix user (" + OtherUserName + ") who plants files and runs processes; CI runs it as root")
	}
	otherOnce.Do(func() {
		if _, err := user.Lookup(OtherUserName); err == nil {
			return
		}
		if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", OtherUserName).CombinedOutput(); err != nil {
			t.Logf("useradd %s: %v: %s", OtherUserName, err, out)
		}
	})
	u, err := user.Lookup(OtherUserName)
	if err != nil {
		t.Fatalf("second user %s: %v (useradd missing?)", OtherUserName, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return Other{Name: u.Username, UID: uid, GID: gid}
}

// Cmd makes cmd run as the other user.
func (o Other) Cmd(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID)}
	return cmd
}

// Chown gives path to the other user.
func (o Other) Chown(t testing.TB, path string) {
	t.Helper()
	if err := os.Lchown(path, o.UID, o.GID); err != nil {
		t.Fatal(err)
	}
}

// SharedDir is a new folder every user may write to, sticky, as /tmp is.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Mkdir makes path a folder of the other user's, open to all (0777): one
// they made first where profdeck would make its own.
func (o Other) Mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	o.Chown(t, path)
}

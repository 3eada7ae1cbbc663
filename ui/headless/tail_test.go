package headless_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestTailMain(t *testing.T) {
	sshtest.Require(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := filepath.Join(home, "ssh_config")
	writeFile(t, cfg, "")
	srv := sshtest.Start(t, sshtest.Options{})
	path := filepath.Join(t.TempDir(), "server log.txt")
	var lines []string
	for i := 1; i <= 15; i++ {
		lines = append(lines, fmt.Sprintf("old %d", i))
	}
	sshtest.AppendLines(t, path, lines...)
	kh := filepath.Join(home, "kh")

	// Unknown host key, headless: refused with the fingerprint.
	var out, errb sshtest.SyncBuffer
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer tcancel()
	code := headless.TailMain(tctx, []string{"--host", srv.Target(), "--identity", srv.ClientKey,
		"--known-hosts", kh, "--ssh-config", cfg, path}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "unknown host key") || !strings.Contains(errb.String(), "SHA256:") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errb = sshtest.SyncBuffer{}, sshtest.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- headless.TailMain(ctx, []string{"--host", srv.Target(), path, "--identity", srv.ClientKey,
			"--known-hosts", kh, "--ssh-config", cfg, "--accept-new-host-key"}, &out, &errb)
	}()
	// The last 10 lines first, then what is appended, across a restart.
	sshtest.WaitFor(t, 10*time.Second, "the last 10 lines", func() bool { return strings.Count(out.String(), "\n") >= 10 })
	sshtest.AppendLines(t, path, "new 1")
	sshtest.WaitFor(t, 10*time.Second, "new 1", func() bool { return strings.Contains(out.String(), "new 1\n") })
	srv.Restart()
	sshtest.AppendLines(t, path, "new 2")
	sshtest.WaitFor(t, 10*time.Second, "new 2", func() bool { return strings.Contains(out.String(), "new 2\n") })
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("tail did not stop")
	}
	want := strings.Join(lines[5:], "\n") + "\nnew 1\nnew 2\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	for _, w := range []string{"connected (round trip", "connection lost", "reconnecting in"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb.String())
		}
	}
	t.Logf("stderr:\n%s", errb.String())
}

func TestTailMainUsage(t *testing.T) {
	var out, errb sshtest.SyncBuffer
	if code := headless.TailMain(context.Background(), []string{"file"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--host") ||
		strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if code := headless.TailMain(context.Background(), []string{"--bogus"}, &out, &errb); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}

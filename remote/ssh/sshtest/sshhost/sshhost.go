// Package sshhost is the setup shared by the tests that run over a real
// OpenSSH sshd: an sshd started by sshtest with an SSH host dialled to it,
// and the Python interpreter to run on the far side.
package sshhost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// Dial starts an sshd on 127.0.0.1 (sshtest.Start with opt) and dials it
// with the server's client key and known_hosts and an empty ssh_config, so
// that the user's own configuration plays no part. The host is closed when
// the test ends; a failed dial fails the test with sshd's log.
func Dial(ctx context.Context, t *testing.T, opt sshtest.Options) (*sshtest.Server, *ssh.Host) {
	t.Helper()
	srv := sshtest.Start(t, opt)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := ssh.Dial(ctx, srv.Target(), ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg,
		ConnectTimeout: 3 * time.Second, HandshakeTimeout: 5 * time.Second, KillGrace: time.Second})
	if err != nil {
		t.Fatalf("dial: %v\nsshd log:\n%s", err, srv.Log())
	}
	t.Cleanup(func() { h.Close() })
	return srv, h
}

// Python is the path of the python3 interpreter itself: a pyenv shim needs
// its shell setup, which a command run over SSH does not have. Without
// python3 the test is skipped, or fails when CI is set.
func Python(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is required in CI: %v", err)
		}
		t.Skip("python3 not installed")
	}
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

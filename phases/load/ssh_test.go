package load_test

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

// The same lifecycle over a real OpenSSH sshd on 127.0.0.1: the launch is
// detached on the far side, the log is followed over SSH and /health is
// reached through a direct-tcpip channel.
func TestServerLifecycleSSH(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	python := needTool(t, "python3")
	// A pyenv shim needs its shell setup; give the remote side the real
	// interpreter.
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	python = strings.TrimSpace(string(out))
	script, err := filepath.Abs("testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	h, err := ssh.Dial(ctx, srv.Target(), ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg,
		ConnectTimeout: 3 * time.Second, HandshakeTimeout: 5 * time.Second, KillGrace: time.Second})
	if err != nil {
		t.Fatalf("dial: %v\nsshd log:\n%s", err, srv.Log())
	}
	defer h.Close()
	lifecycle(t, h, python, script, dir)
}

package load_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// The same lifecycle over a real OpenSSH sshd on 127.0.0.1: the launch is
// detached on the far side, the log is followed over SSH and /health is
// reached through a direct-tcpip channel.
func TestServerLifecycleSSH(t *testing.T) {
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
	dir := t.TempDir()
	lifecycle(t, h, python, script, dir)
}

package ssh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// startAgent runs a real ssh-agent on a socket in the test's directory and
// points SSH_AUTH_SOCK at it.
func startAgent(t *testing.T, keys ...string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-agent not installed")
		}
		t.Skip("ssh-agent not installed")
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent socket did not appear")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %s: %v %s", k, err, out)
		}
	}
}

func TestAuthAgent(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	startAgent(t, srv.ClientKey)
	opt := fastOpts(srv, cfg)
	opt.Identity = "" // only the agent has the key
	h := dialTest(t, srv, opt)
	if out, err := remote.Output(testCtx(t, 10*time.Second), h, "echo agent-ok"); err != nil || out != "agent-ok\n" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestAuthDefaultIdentityFile(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	b, _ := os.ReadFile(srv.ClientKey)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), b, 0o600)
	opt := fastOpts(srv, cfg)
	opt.Identity = ""
	dialTest(t, srv, opt).Close()
}

func TestAuthWrongKeyIsPermanent(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	other := filepath.Join(home, "id_other")
	if _, err := sshtest.WriteKey(other, ""); err != nil {
		t.Fatal(err)
	}
	opt := fastOpts(srv, cfg)
	opt.Identity = other
	err := dialErr(t, srv, opt)
	t.Logf("%v", err)
	if err == nil || !isPermanent(err) || !strings.Contains(err.Error(), "authentication as") || !strings.Contains(err.Error(), other) {
		t.Fatalf("got %v", err)
	}
	opt.Identity = filepath.Join(home, "no such key")
	if err := dialErr(t, srv, opt); err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Fatalf("missing identity: %v", err)
	}
}

func TestAuthEncryptedKey(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	enc := filepath.Join(home, "id_enc")
	pub, err := sshtest.WriteKey(enc, "s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	srv.Authorize(pub)
	opt := fastOpts(srv, cfg)
	opt.Identity = enc

	// Headless: an error that names the file.
	err = dialErr(t, srv, opt)
	t.Logf("%v", err)
	if err == nil || !strings.Contains(err.Error(), enc) || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("headless: %v", err)
	}

	// With a prompt: asked (as a secret) for that file; a wrong answer is
	// asked again.
	var asked []string
	answers := []string{"wrong", "s3cret pass"}
	opt.Prompt = func(q string, secret bool) (string, error) {
		if !secret {
			t.Error("passphrase not asked as a secret")
		}
		asked = append(asked, q)
		a := answers[0]
		answers = answers[1:]
		return a, nil
	}
	h := dialTest(t, srv, opt)
	if len(asked) != 2 || !strings.Contains(asked[0], enc) {
		t.Fatalf("questions %q", asked)
	}
	// Reconnecting does not ask again.
	srv.Restart()
	if _, err := remote.Output(testCtx(t, 10*time.Second), h, "true"); err != nil {
		t.Logf("first command after restart: %v", err)
	}
	waitUp(t, h)
	if len(asked) != 2 {
		t.Fatalf("asked again on reconnect: %q", asked)
	}
}

// waitUp waits until a command runs on h.
func waitUp(t *testing.T, h *Host) {
	t.Helper()
	sshtest.WaitFor(t, 10*time.Second, "the connection", func() bool {
		_, err := remote.Output(testCtx(t, 2*time.Second), h, "true")
		return err == nil
	})
}

package ssh

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// TestProxyJump reaches a second sshd through the first with an
// ~/.ssh/config alias whose ProxyJump names another alias.
func TestProxyJump(t *testing.T) {
	home, _ := isolate(t)
	jump := sshtest.Start(t, sshtest.Options{LogLevel: "DEBUG1"})
	target := sshtest.Start(t, sshtest.Options{})
	cfg := filepath.Join(home, "config")
	kh := filepath.Join(home, "known_hosts")
	os.WriteFile(kh, []byte(jump.KnownHostsLine()+"\n"+target.KnownHostsLine()+"\n"), 0o600)
	conf := "Host gpu1\n  HostName 127.0.0.1\n  Port " + itoa(target.Port) + "\n  User " + target.User +
		"\n  IdentityFile " + target.ClientKey + "\n  ProxyJump bastion\n  UserKnownHostsFile " + kh + "\n\n" +
		"Host bastion\n  HostName 127.0.0.1\n  Port " + itoa(jump.Port) + "\n  IdentityFile " + jump.ClientKey +
		"\n  UserKnownHostsFile " + kh + "\n"
	os.WriteFile(cfg, []byte(conf), 0o600)
	opt := fastOpts(target, cfg)
	opt.Identity, opt.KnownHosts = "", ""

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	h, err := Dial(ctx, "gpu1", opt)
	if err != nil {
		t.Fatalf("Dial through the jump host: %v", err)
	}
	t.Logf("connected through one jump host in %v", time.Since(start))
	defer h.Close()
	// The jump host's sshd forwards the target's bytes: it was made to
	// send at once too (a command with a terminal ran on it).
	if !strings.Contains(jump.Log(), "session_pty_req") {
		t.Errorf("no terminal session on the jump host:\n%s", jump.Log())
	}
	if how, err := h.Nodelay(); how != NodelayPTY || err != nil {
		t.Errorf("Nodelay = %q, %v", how, err)
	}
	if h.Label() != "gpu1 (127.0.0.1:"+itoa(target.Port)+")" {
		t.Errorf("label %q", h.Label())
	}
	out, err := remote.Output(ctx, h, "echo via-jump")
	if err != nil || out != "via-jump\n" {
		t.Fatalf("%q %v", out, err)
	}
	for _, l := range strings.Split(jump.Log(), "\n") {
		if strings.Contains(l, "port "+itoa(target.Port)) {
			t.Logf("jump sshd: %s", l)
		}
	}
	// The jump host forwarded the connection to the target's port.
	if !strings.Contains(jump.Log(), "port "+itoa(target.Port)) {
		t.Errorf("jump sshd did not log forwarding to port %d:\n%s", target.Port, jump.Log())
	}
	// Losing the jump host drops the target connection; it comes back
	// when the jump host does.
	jump.Stop()
	sshtest.WaitFor(t, 10*time.Second, "the drop", func() bool {
		_, err := remote.Output(testCtx(t, 300*time.Millisecond), h, "true")
		return err != nil
	})
	jump.Restart()
	waitUp(t, h)
}

// TestProxyJumpErrorNamesTheHop: a failing jump host is named in the error.
func TestProxyJumpErrorNamesTheHop(t *testing.T) {
	home, _ := isolate(t)
	target := sshtest.Start(t, sshtest.Options{})
	cfg := filepath.Join(home, "config")
	os.WriteFile(cfg, []byte("Host gpu1\n  HostName 127.0.0.1\n  Port "+itoa(target.Port)+"\n  ProxyJump nobody@127.0.0.1:1\n"), 0o600)
	opt := fastOpts(target, cfg)
	_, err := Dial(testCtx(t, 10*time.Second), "gpu1", opt)
	if err == nil || !strings.Contains(err.Error(), "via jump host 127.0.0.1:1") || !strings.Contains(err.Error(), "ssh gpu1 (") {
		t.Fatalf("got %v", err)
	}
}

// TestProxyJumpTwoHops: "ProxyJump a,b" goes through a, then b.
func TestProxyJumpTwoHops(t *testing.T) {
	home, _ := isolate(t)
	j1 := sshtest.Start(t, sshtest.Options{})
	j2 := sshtest.Start(t, sshtest.Options{LogLevel: "DEBUG1"})
	target := sshtest.Start(t, sshtest.Options{})
	kh := filepath.Join(home, "known_hosts")
	os.WriteFile(kh, []byte(j1.KnownHostsLine()+"\n"+j2.KnownHostsLine()+"\n"+target.KnownHostsLine()+"\n"), 0o600)
	cfg := filepath.Join(home, "config")
	conf := strings.ReplaceAll(target.ConfigBlock("gpu1"), target.KnownHosts, kh) + "  ProxyJump hop1,hop2\n\n" +
		strings.ReplaceAll(j1.ConfigBlock("hop1"), j1.KnownHosts, kh) +
		strings.ReplaceAll(j2.ConfigBlock("hop2"), j2.KnownHosts, kh)
	os.WriteFile(cfg, []byte(conf), 0o600)
	opt := fastOpts(target, cfg)
	opt.Identity, opt.KnownHosts = "", ""
	ctx := testCtx(t, 10*time.Second)
	h, err := Dial(ctx, "gpu1", opt)
	if err != nil {
		t.Fatalf("Dial through two jump hosts: %v", err)
	}
	defer h.Close()
	if out, err := remote.Output(ctx, h, "echo two-hops"); err != nil || out != "two-hops\n" {
		t.Fatalf("%q %v", out, err)
	}
	// The second hop forwarded to the target; the first hop to the second.
	if !strings.Contains(j2.Log(), "target 127.0.0.1 port "+itoa(target.Port)) {
		t.Errorf("second hop did not forward to the target:\n%s", j2.Log())
	}
	j1.Stop()
	sshtest.WaitFor(t, 10*time.Second, "the drop when the first hop dies", func() bool {
		_, err := remote.Output(testCtx(t, 300*time.Millisecond), h, "true")
		return err != nil
	})
}

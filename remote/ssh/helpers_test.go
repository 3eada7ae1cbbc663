package ssh

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// isolate gives the test an empty home (no ~/.ssh of the machine) and no
// agent, and returns an empty ssh config file.
func isolate(t *testing.T) (home, config string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	config = filepath.Join(home, "ssh_config")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, config
}

// fastOpts are options with short timers for tests.
func fastOpts(srv *sshtest.Server, config string) Options {
	return Options{
		Identity:         srv.ClientKey,
		KnownHosts:       srv.KnownHosts,
		SSHConfig:        config,
		KeepAlive:        time.Second,
		KeepAliveTimeout: 2 * time.Second,
		ConnectTimeout:   2 * time.Second,
		HandshakeTimeout: 3 * time.Second,
		BackoffMin:       100 * time.Millisecond,
		BackoffMax:       800 * time.Millisecond,
		KillGrace:        time.Second,
	}
}

func dialTest(t *testing.T, srv *sshtest.Server, opt Options) *Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := Dial(ctx, srv.Target(), opt)
	if err != nil {
		t.Fatalf("Dial: %v\nsshd log:\n%s", err, srv.Log())
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int) string { return strconv.Itoa(n) }

package hosts

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

func TestOpenSSHTarget(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	srv := sshtest.Start(t, sshtest.Options{})
	cfg := filepath.Join(home, "config")
	os.WriteFile(cfg, []byte(srv.ConfigBlock("gpu1")), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Open(ctx, "gpu1", Options{SSHConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.(remote.StateReporter); !ok || h.Name() != "gpu1" || remote.IsSimulated(h) {
		t.Fatalf("host %T named %q", h, h.Name())
	}
	out, err := remote.Output(ctx, h, "echo hi")
	if err != nil || out != "hi\n" {
		t.Fatalf("%q %v", out, err)
	}
	// A host that is not in known_hosts is refused, with a nil Host.
	os.WriteFile(filepath.Join(home, "kh"), nil, 0o600)
	h2, err := Open(ctx, srv.Target(), Options{Identity: srv.ClientKey, SSHConfig: cfg, KnownHosts: filepath.Join(home, "kh")})
	if err == nil || h2 != nil || !strings.Contains(err.Error(), "unknown host key") {
		t.Fatalf("got %v, %v", h2, err)
	}
}

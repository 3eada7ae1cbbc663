package phases_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

func TestForwardStates(t *testing.T) {
	sshtest.Require(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	srv := sshtest.Start(t, sshtest.Options{})
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := ssh.Dial(ctx, srv.Target(), ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg,
		KeepAlive: time.Second, KeepAliveTimeout: 2 * time.Second, ConnectTimeout: 2 * time.Second, HandshakeTimeout: 3 * time.Second,
		BackoffMin: 100 * time.Millisecond, BackoffMax: 800 * time.Millisecond, KillGrace: time.Second})
	if err != nil {
		t.Fatalf("dial: %v\nsshd log:\n%s", err, srv.Log())
	}
	defer h.Close()
	out := make(chan phases.Event, 64)
	done := make(chan struct{})
	go func() {
		phases.ForwardStates(context.Background(), h, &phases.Emitter{Out: out})
		close(done)
	}()
	srv.Restart()
	var seen []string
	deadline := time.After(10 * time.Second)
	for len(seen) < 4 || seen[len(seen)-1] != "up" {
		select {
		case ev := <-out:
			cs, ok := ev.Data.(phases.ConnState)
			if (ev.Kind != phases.KindSessionConn && ev.Kind != phases.KindSessionRTT) || !ok || cs.Host != h.Name() {
				t.Fatalf("event %+v", ev)
			}
			if ev.Kind == phases.KindSessionRTT && (len(seen) == 0 || seen[len(seen)-1] != cs.State) {
				t.Fatalf("a change of state to %q came as a round-trip update", cs.State)
			}
			if cs.State == "up" && cs.RTTms <= 0 {
				t.Errorf("up without a round trip: %+v", cs)
			}
			if cs.State == "backoff" && (cs.Retry <= 0 || cs.Err == "") {
				t.Errorf("backoff without delay or reason: %+v", cs)
			}
			if len(seen) == 0 || seen[len(seen)-1] != cs.State {
				seen = append(seen, cs.State)
			}
		case <-deadline:
			t.Fatalf("states so far %q", seen)
		}
	}
	h.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ForwardStates did not return after Close")
	}
	t.Logf("states %q", seen)
}

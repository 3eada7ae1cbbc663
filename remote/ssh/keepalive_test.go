package ssh

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// relay forwards TCP to an address and can freeze, like a network path
// that silently stops carrying packets.
type relay struct {
	l      net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func startRelay(t *testing.T, to string) *relay {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{l: l}
	t.Cleanup(r.close)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, u)
			r.mu.Unlock()
			go r.pipe(c, u)
			go r.pipe(u, c)
		}
	}()
	return r
}

func (r *relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for r.frozen.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (r *relay) close() {
	r.frozen.Store(false)
	r.l.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

// TestKeepaliveNoticesSilentDrop: with the path frozen no packet comes
// back; the missed keepalive reply closes the connection, and it is
// re-established when the path works again.
func TestKeepaliveNoticesSilentDrop(t *testing.T) {
	home, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	r := startRelay(t, srv.Addr())
	addr := r.l.Addr().String()
	kh := filepath.Join(home, "known_hosts")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, srv.HostKey)+"\n"), 0o600)
	opt := fastOpts(srv, cfg)
	opt.KnownHosts = kh
	opt.KeepAlive, opt.KeepAliveTimeout = 300*time.Millisecond, 700*time.Millisecond
	h, err := Dial(testCtx(t, 10*time.Second), srv.User+"@"+addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	states := make(chan remote.State, 100)
	go func() {
		for s := range h.States() {
			states <- s
		}
		close(states)
	}()
	frozenAt := time.Now()
	r.frozen.Store(true)
	var down remote.State
	deadline := time.After(4 * time.Second)
wait:
	for {
		select {
		case s := <-states:
			if s.State == "down" {
				down = s
				break wait
			}
		case <-deadline:
			t.Fatal("silent drop not noticed in 4 s")
		}
	}
	t.Logf("silent drop noticed after %v: %v", time.Since(frozenAt).Round(time.Millisecond), down.Err)
	if down.Err == nil || !strings.Contains(down.Err.Error(), "keepalive") {
		t.Errorf("down state error %v", down.Err)
	}
	r.frozen.Store(false)
	for {
		select {
		case s := <-states:
			if s.State == "up" {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not back up after the path recovered")
		}
	}
}

// TestHandshakeTimeout: a server that accepts and says nothing must not
// hang the connect (ssh.Dial's Timeout covers only TCP).
func TestHandshakeTimeout(t *testing.T) {
	_, cfg := isolate(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c) }()
		}
	}()
	opt := Options{SSHConfig: cfg, HandshakeTimeout: 500 * time.Millisecond, KnownHosts: filepath.Join(t.TempDir(), "kh")}
	start := time.Now()
	_, err = Dial(context.Background(), l.Addr().String(), opt)
	took := time.Since(start)
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Permanent || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("want a retryable timeout, got %v", err)
	}
	if took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
}

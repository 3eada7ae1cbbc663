package ssh

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// chunkServer serves, on every connection, chunks of chunkBytes every
// 2 ms, as a server streams tokens.
func chunkServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, chunkBytes)
				for range chunkCount {
					if _, err := c.Write(b); err != nil {
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

const (
	chunkBytes = 150 // about one SSE event with continuous usage
	chunkCount = 250
)

// chunksPerRead reads streams streams from addr at once through dial and
// returns the chunks that arrived per read: 1 when each came by itself.
func chunksPerRead(t *testing.T, dial func(ctx context.Context, n, a string) (net.Conn, error), addr string, streams int) float64 {
	t.Helper()
	var mu sync.Mutex
	var reads, bytes int
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := dial(testCtx(t, 20*time.Second), "tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			buf := make([]byte, 64<<10)
			for {
				n, err := nc.Read(buf)
				mu.Lock()
				if n > 0 {
					reads++
					bytes += n
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if bytes != streams*chunkBytes*chunkCount {
		t.Fatalf("read %d bytes, want %d", bytes, streams*chunkBytes*chunkCount)
	}
	return float64(bytes/chunkBytes) / float64(reads)
}

// noDelay reads TCP_NODELAY on sshd's side of the host's live connection.
func noDelay(t *testing.T, srv *sshtest.Server, h *Host) bool {
	t.Helper()
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	if c == nil {
		t.Fatal("no connection")
	}
	on, err := srv.NoDelay(c.client.LocalAddr())
	if err != nil {
		t.Fatalf("reading sshd's TCP_NODELAY: %v", err)
	}
	return on
}

// sshd's side of the host's connection has TCP_NODELAY on, where a
// connection with nothing run on it (what the host had before, and what
// `ssh -N -L` has) does not; streams forwarded through the host arrive a
// chunk at a time.
func TestForwardedStreamsArriveAtOnce(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	_, cfg := isolate(t)
	addr := chunkServer(t)
	raw := srv.DialBare(t)
	if on, err := srv.NoDelay(raw.LocalAddr()); on || err != nil {
		t.Fatalf("a connection with nothing run on it: TCP_NODELAY %v, %v; want off", on, err)
	}
	rawBunch := chunksPerRead(t, raw.DialContext, addr, 4)
	h := dialTest(t, srv, fastOpts(srv, cfg))
	if how, err := h.Nodelay(); how != NodelayPTY || err != nil {
		t.Fatalf("Nodelay = %q, %v; want %q", how, err, NodelayPTY)
	}
	if !noDelay(t, srv, h) {
		t.Fatal("sshd's side of the host's connection has TCP_NODELAY off")
	}
	// Several connections to the same server: each is made to send at once.
	h2 := dialTest(t, srv, fastOpts(srv, cfg))
	if !noDelay(t, srv, h2) || !noDelay(t, srv, h) {
		t.Fatal("a second connection left TCP_NODELAY off")
	}
	got := chunksPerRead(t, h.DialContext, addr, 4)
	t.Logf("chunks per read, 4 streams of a chunk every 2 ms: %.3f with nothing run on the connection, %.3f through the host", rawBunch, got)
	if got > 1.2 {
		t.Errorf("%.3f chunks per read through the host; want about one", got)
	}
	// A reconnected connection is made to send at once too.
	h.mu.Lock()
	old := h.cur
	h.mu.Unlock()
	srv.Restart()
	sshtest.WaitFor(t, 10*time.Second, "the reconnect", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.cur != nil && h.cur != old
	})
	if how, err := h.Nodelay(); how != NodelayPTY || err != nil || !noDelay(t, srv, h) {
		t.Fatalf("after the reconnect: Nodelay = %q, %v", how, err)
	}
}

// A server that refuses terminals gets a plain command, which turns
// TCP_NODELAY on as well (OpenSSH sets it for the first command of a
// connection, terminal or not).
func TestNodelayWithoutTerminals(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{ExtraConfig: []string{"PermitTTY no"}})
	_, cfg := isolate(t)
	h := dialTest(t, srv, fastOpts(srv, cfg))
	if how, err := h.Nodelay(); how != NodelayExec || err != nil {
		t.Fatalf("Nodelay = %q, %v; want %q", how, err, NodelayExec)
	}
	if !noDelay(t, srv, h) {
		t.Error("TCP_NODELAY off after a plain command")
	}
}

// A server that allows no session at all (MaxSessions 0, forwarding only)
// still connects and forwards; the host says why its streams may bunch.
func TestNodelayRefused(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{ExtraConfig: []string{"MaxSessions 0"}})
	_, cfg := isolate(t)
	h := dialTest(t, srv, fastOpts(srv, cfg))
	how, err := h.Nodelay()
	if how != NodelayNone || err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("Nodelay = %q, %v; want %q with the host named", how, err, NodelayNone)
	}
	t.Logf("refused: %v", err)
	if noDelay(t, srv, h) {
		t.Error("TCP_NODELAY on although no command ran")
	}
	if got := chunksPerRead(t, h.DialContext, chunkServer(t), 1); got <= 0 {
		t.Errorf("forwarding failed: %.3f", got)
	}
}

package ssh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// collector gathers Follow events.
type collector struct {
	mu     sync.Mutex
	lines  []string
	resets []string
	last   int64
}

func (c *collector) add(ev remote.FollowEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Reset {
		c.resets = append(c.resets, ev.Note)
		return
	}
	c.lines = append(c.lines, ev.Line)
	c.last = ev.Offset
}

func (c *collector) snapshot() ([]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...), append([]string(nil), c.resets...)
}

func startFollow(t *testing.T, h *Host, path string, from int64) (*collector, func() error) {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		err := h.Follow(ctx, path, from, c.add)
		if ctx.Err() == nil {
			t.Errorf("Follow returned before it was cancelled: %v", err)
		}
		errc <- err
	}()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(5 * time.Second):
				pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
				t.Error("Follow did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return c, stop
}

// TestFollowAcrossRestarts kills and restarts sshd five times while a file
// grows by 100 lines a second: every line must arrive exactly once, in order.
func TestFollowAcrossRestarts(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	path := filepath.Join(t.TempDir(), "vllm server.log")

	var downs, ups int
	var stMu sync.Mutex
	go func() {
		for s := range h.States() {
			stMu.Lock()
			switch s.State {
			case "down":
				downs++
			case "up":
				if s.RTT == 0 || downs > ups-1 {
					ups++
				}
			}
			stMu.Unlock()
		}
	}()

	stopWrite := make(chan struct{})
	wrote := make(chan int)
	go func() {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		n := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWrite:
				wrote <- n
				return
			case <-tick.C:
			}
			fmt.Fprintf(f, "INFO %s line %05d of the log\n", time.Now().Format("15:04:05.000"), n)
			n++
		}
	}()

	c, stop := startFollow(t, h, path, 0)
	seen := 0
	for i := 0; i < 5; i++ {
		// Restart only once the host is up again after the last restart
		// and the follow live on the new connection, so each restart cuts
		// a running tail. (Lines alone do not say it: a client behind
		// still reads the old connection's last lines after a restart.)
		sshtest.WaitFor(t, 10*time.Second, "the host up again", func() bool {
			stMu.Lock()
			defer stMu.Unlock()
			return downs >= i && ups > downs
		})
		l, _ := c.snapshot()
		seen = len(l)
		sshtest.WaitFor(t, 10*time.Second, "the follow to resume", func() bool {
			l, _ := c.snapshot()
			return len(l) >= seen+20
		})
		srv.Restart()
	}
	time.Sleep(300 * time.Millisecond)
	close(stopWrite)
	n := <-wrote
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sshtest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d lines", n), func() bool {
		lines, _ := c.snapshot()
		return len(lines) >= n
	})
	if err := stop(); err == nil {
		t.Error("Follow returned nil after cancel")
	}
	lines, resets := c.snapshot()
	if len(resets) > 0 {
		t.Errorf("unexpected resets: %q", resets)
	}
	got := strings.Join(lines, "\n") + "\n"
	if got != string(want) {
		t.Fatalf("followed output differs from the file: got %d lines, file has %d", len(lines), n)
	}
	if c.last != int64(len(want)) {
		t.Errorf("last offset %d, file size %d", c.last, len(want))
	}
	stMu.Lock()
	defer stMu.Unlock()
	if downs < 5 {
		t.Errorf("saw %d down states, want 5", downs)
	}
	t.Logf("%d lines across 5 restarts, %d down states", n, downs)
}

func TestFollowTruncateAndReplace(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	dir := t.TempDir()
	path := filepath.Join(dir, "server.log")
	sshtest.AppendLines(t, path, "old 1", "old 2")
	c, _ := startFollow(t, h, path, 0)
	sshtest.WaitFor(t, 10*time.Second, "the first lines", func() bool { l, _ := c.snapshot(); return len(l) == 2 })

	// Truncated in place (a server restarted with > log).
	if err := os.WriteFile(path, []byte("new 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sshtest.WaitFor(t, 10*time.Second, "the line after truncation", func() bool { l, _ := c.snapshot(); return len(l) == 3 })
	// Rotated: renamed away and a new file made.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	sshtest.AppendLines(t, path, "rotated 1", "rotated 2")
	sshtest.WaitFor(t, 10*time.Second, "the lines of the new file", func() bool { l, _ := c.snapshot(); return len(l) == 5 })
	lines, resets := c.snapshot()
	if strings.Join(lines, "|") != "old 1|old 2|new 1|rotated 1|rotated 2" {
		t.Fatalf("lines %q", lines)
	}
	if len(resets) != 2 || !strings.Contains(resets[0], "truncated") || !strings.Contains(resets[1], "replaced") {
		t.Fatalf("resets %q", resets)
	}
	if c.last != int64(len("rotated 1\nrotated 2\n")) {
		t.Errorf("offset %d after the rotation", c.last)
	}
}

// TestFollowTruncatedWhileDown: the file is truncated and grows past the
// old offset while the connection is down; the resume must notice.
func TestFollowTruncatedWhileDown(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	path := filepath.Join(t.TempDir(), "x.log")
	sshtest.AppendLines(t, path, "a1", "a2")
	c, _ := startFollow(t, h, path, 0)
	sshtest.WaitFor(t, 10*time.Second, "2 lines", func() bool { l, _ := c.snapshot(); return len(l) == 2 })
	srv.Stop()
	if err := os.WriteFile(path, []byte("b1 is longer\nb2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	sshtest.WaitFor(t, 10*time.Second, "the new lines", func() bool { l, _ := c.snapshot(); return len(l) == 4 })
	lines, resets := c.snapshot()
	if strings.Join(lines, "|") != "a1|a2|b1 is longer|b2" || len(resets) != 1 {
		t.Fatalf("lines %q resets %q", lines, resets)
	}
}

func TestFollowWaitsForFileAndResumesFromOffset(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	path := filepath.Join(t.TempDir(), "later.log")
	c, stop := startFollow(t, h, path, 0)
	time.Sleep(300 * time.Millisecond)
	sshtest.AppendLines(t, path, "first", "second")
	sshtest.WaitFor(t, 10*time.Second, "2 lines", func() bool { l, _ := c.snapshot(); return len(l) == 2 })
	stop()
	lines, resets := c.snapshot()
	if len(resets) != 0 || strings.Join(lines, "|") != "first|second" {
		t.Fatalf("lines %q resets %q", lines, resets)
	}
	// Starting at the offset of "second" gives only what follows.
	sshtest.AppendLines(t, path, "third")
	c2, _ := startFollow(t, h, path, int64(len("first\n")))
	sshtest.WaitFor(t, 10*time.Second, "2 lines", func() bool { l, _ := c2.snapshot(); return len(l) == 2 })
	lines, _ = c2.snapshot()
	if strings.Join(lines, "|") != "second|third" {
		t.Fatalf("from offset: %q", lines)
	}
}

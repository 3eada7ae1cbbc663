package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// collector gathers Follow events and lets a test wait for a condition.
type collector struct {
	mu  sync.Mutex
	evs []remote.FollowEvent
}

func (c *collector) add(ev remote.FollowEvent) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

func (c *collector) snapshot() []remote.FollowEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]remote.FollowEvent(nil), c.evs...)
}

func (c *collector) lines() []string {
	var out []string
	for _, ev := range c.snapshot() {
		if ev.Reset {
			out = append(out, "<reset>")
		} else {
			out = append(out, ev.Line)
		}
	}
	return out
}

func (c *collector) waitFor(t *testing.T, what string, ok func([]string) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ok(c.lines()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; got %q", what, c.lines())
}

func startFollow(t *testing.T, path string, from int64) (*collector, func() error) {
	t.Helper()
	h := &Host{PollInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c := &collector{}
	errc := make(chan error, 1)
	go func() { errc <- h.Follow(ctx, path, from, c.add) }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-errc:
			case <-time.After(5 * time.Second):
				stopErr = fmt.Errorf("Follow did not stop")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return c, stop
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func equal(want ...string) func([]string) bool {
	return func(got []string) bool { return strings.Join(got, "\x00") == strings.Join(want, "\x00") }
}

func TestFollowWaitsPartialLinesAndOffsets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "server.log")
	c, stop := startFollow(t, p, 0)
	time.Sleep(60 * time.Millisecond) // the file is missing: nothing yet
	if len(c.snapshot()) != 0 {
		t.Fatalf("events before the file exists: %q", c.lines())
	}
	appendFile(t, p, "one\ntw")
	c.waitFor(t, "first line", equal("one"))
	time.Sleep(60 * time.Millisecond)
	if got := c.lines(); len(got) != 1 {
		t.Fatalf("half a line was emitted: %q", got)
	}
	appendFile(t, p, "o\r\nthree\n")
	c.waitFor(t, "three lines", equal("one", "two", "three"))
	evs := c.snapshot()
	if evs[0].Offset != 4 || evs[1].Offset != 9 || evs[2].Offset != 15 {
		t.Fatalf("offsets %d %d %d", evs[0].Offset, evs[1].Offset, evs[2].Offset)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}

	// Resuming from an offset gives only what follows.
	c2, _ := startFollow(t, p, evs[1].Offset)
	c2.waitFor(t, "resumed line", equal("three"))
}

func TestFollowTruncateAndReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "server.log")
	if err := os.WriteFile(p, []byte("a1\na2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := startFollow(t, p, 0)
	c.waitFor(t, "initial lines", equal("a1", "a2"))

	// Truncate in place, then write less than before.
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p, "b1\n")
	c.waitFor(t, "reset after truncate", equal("a1", "a2", "<reset>", "b1"))

	// Replace by rename (a new inode), as a restart's new log is; the old
	// file's last line written before the rename is still delivered once.
	appendFile(t, p, "b2\n")
	tmp := filepath.Join(dir, "new.log")
	if err := os.WriteFile(tmp, []byte("c1\nc2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "reset after replace", equal("a1", "a2", "<reset>", "b1", "b2", "<reset>", "c1", "c2"))
	appendFile(t, p, "c3\n")
	c.waitFor(t, "growth after replace", equal("a1", "a2", "<reset>", "b1", "b2", "<reset>", "c1", "c2", "c3"))

	// Removed, then created again.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	appendFile(t, p, "d1\n")
	c.waitFor(t, "reset after re-create", equal("a1", "a2", "<reset>", "b1", "b2", "<reset>", "c1", "c2", "c3", "<reset>", "d1"))
	for _, ev := range c.snapshot() {
		if ev.Reset && ev.Note == "" {
			t.Fatal("a reset without a note")
		}
	}
}

func TestFollowManyLinesExactlyOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.log")
	c, _ := startFollow(t, p, 0)
	const n = 20000
	var want []string
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("line %05d %s", i, strings.Repeat("x", i%97))
		want = append(want, s)
		if _, err := f.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	f.Close()
	c.waitFor(t, "all lines", func(got []string) bool { return len(got) >= n })
	time.Sleep(50 * time.Millisecond)
	if got := c.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d lines, want %d, or out of order", len(got), n)
	}
}

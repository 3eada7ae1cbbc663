package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestRunStreamsAndFails(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	h := New()
	var mu sync.Mutex
	var got []remote.Line
	err := h.Run(ctx, `echo one; echo two >&2; printf 'three\r\n'; printf 'no newline'`, nil, func(l remote.Line) {
		mu.Lock()
		got = append(got, l)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, errs []string
	for _, l := range got {
		if l.Stream == remote.Stdout {
			out = append(out, l.Text)
		} else {
			errs = append(errs, l.Text)
		}
	}
	if strings.Join(out, "|") != "one|three|no newline" || strings.Join(errs, "|") != "two" {
		t.Fatalf("stdout %q stderr %q", out, errs)
	}

	err = h.Run(ctx, `echo first >&2; echo "bad thing" >&2; exit 3`, nil, nil)
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Status != 3 || !strings.Contains(ee.Stderr, "bad thing") {
		t.Fatalf("want exit 3 with stderr, got %#v", err)
	}
}

func TestRunStdin(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	out, err := remote.Output(ctx, New(), "tr a-z A-Z")
	if err != nil || out != "" {
		t.Fatalf("no stdin: %q %v", out, err)
	}
	var lines []string
	err = New().Run(ctx, "tr a-z A-Z", strings.NewReader("hello\nworld\n"), func(l remote.Line) { lines = append(lines, l.Text) })
	if err != nil || strings.Join(lines, ",") != "HELLO,WORLD" {
		t.Fatalf("got %q %v", lines, err)
	}
}

func TestRunLongLineIsSplit(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	var lines []string
	cmd := "head -c " + strconv.Itoa(MaxLine+10) + " /dev/zero | tr '\\0' x; echo; echo end"
	if err := New().Run(ctx, cmd, nil, func(l remote.Line) { lines = append(lines, l.Text) }); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || len(lines[0]) != MaxLine || len(lines[1]) != 10 || lines[2] != "end" {
		t.Fatalf("got %d lines, lengths %d", len(lines), len(lines[0]))
	}
}

// groupMembers lists the pids whose process group is pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc here")
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so cut after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		if f[0] == "Z" {
			continue // a zombie has no resources left; its parent reaps it
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestCancelKillsWholeGroup(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"term", `echo $$; sleep 300 & sleep 300 & wait`},
		// A child that ignores SIGTERM must still go, by SIGKILL after the grace.
		{"kill", `echo $$; sh -c 'trap "" TERM; sleep 300' & trap "" TERM; wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{Grace: 300 * time.Millisecond}
			ctx, cancel := context.WithCancel(testCtx(t, 20*time.Second))
			pidc := make(chan int, 1)
			errc := make(chan error, 1)
			go func() {
				errc <- h.Run(ctx, tc.script, nil, func(l remote.Line) {
					if p, err := strconv.Atoi(l.Text); err == nil {
						pidc <- p
					}
				})
			}()
			var pgid int
			select {
			case pgid = <-pidc:
			case <-time.After(10 * time.Second):
				t.Fatal("no pid printed")
			}
			// Wait until the children exist.
			deadline := time.Now().Add(5 * time.Second)
			for len(groupMembers(t, pgid)) < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := len(groupMembers(t, pgid)); n < 2 {
				t.Fatalf("want the shell and its children in group %d, found %d", pgid, n)
			}
			start := time.Now()
			cancel()
			var err error
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled, got %v", err)
			}
			deadline = time.Now().Add(3 * time.Second)
			var left []int
			for time.Now().Before(deadline) {
				if left = groupMembers(t, pgid); len(left) == 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Fatalf("processes left in group %d: %v", pgid, left)
			}
			t.Logf("group %d gone %v after cancel", pgid, time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestQuoteRoundTripsThroughSh(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	h := New()
	dir := t.TempDir()
	odd := []string{
		"plain",
		"with space",
		`it's "quoted"`,
		"$(touch " + filepath.Join(dir, "pwned") + ")",
		"`touch " + filepath.Join(dir, "pwned2") + "`; rm -rf x & echo $HOME * ?",
		"tab\there\nnewline",
		"-n",
		"",
	}
	for _, s := range odd {
		out, err := remote.Output(ctx, h, "printf '%s' "+remote.Quote(s))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got := strings.TrimSuffix(out, "\n"); got != s {
			t.Errorf("printf %q came back as %q", s, got)
		}
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("a quoted argument was executed (%s exists)", f)
		}
	}
	// A path with spaces, quotes and $(...) in a file name.
	p := filepath.Join(dir, `a b 'c' "d" $(echo x)`, "log file.txt")
	if err := h.WriteFile(ctx, p, []byte("content 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := remote.Output(ctx, h, "cat "+remote.Quote(p))
	if err != nil || out != "content 1\n" {
		t.Fatalf("cat %s: %q %v", p, out, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	b, err := h.ReadFile(ctx, p)
	if err != nil || string(b) != "content 1\n" {
		t.Fatalf("ReadFile: %q %v", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temporary files left next to %s: %v", p, ents)
	}
}

func TestDial(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	_, err := New().DialContext(ctx, "tcp", "127.0.0.1:1")
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

// A "~/" path names the same file to Run (through the shell) and to the
// file methods.
func TestHomePathsAgreeWithTheShell(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	h := New()
	ctx := context.Background()
	if err := h.WriteFile(ctx, "~/a dir/x.txt", []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := remote.Output(ctx, h, "cat "+remote.QuotePath("~/a dir/x.txt"))
	if err != nil || out != "hi\n" {
		t.Fatalf("shell read %q, %v", out, err)
	}
	if err := h.Run(ctx, "echo there >> "+remote.QuotePath("~/a dir/x.txt"), nil, nil); err != nil {
		t.Fatal(err)
	}
	b, err := h.ReadFile(ctx, "~/a dir/x.txt")
	if err != nil || string(b) != "hi\nthere\n" {
		t.Fatalf("ReadFile %q, %v", b, err)
	}
}

// Output the shell wrote before it exited reaches a slow consumer whole:
// the wait after the exit is for output that stopped coming, not a bound
// on reading what is there (a streamed trace parsed under load lost its
// end that way).
func TestRunSlowConsumerGetsEveryLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var n int
	start := time.Now()
	err := New().Run(ctx, "seq 1 6000", nil, func(l remote.Line) {
		n++
		time.Sleep(300 * time.Microsecond) // seconds for every line
	})
	if err != nil || n != 6000 {
		t.Fatalf("%d of 6000 lines after %v: %v", n, time.Since(start), err)
	}
}

// A background child that keeps the shell's stdout open and writes
// nothing does not keep Run waiting: it returns a moment after the shell.
func TestRunBackgroundChildHoldsPipe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	start := time.Now()
	err := New().Run(ctx, "echo hi; sleep 20 &", nil, func(l remote.Line) { got = append(got, l.Text) })
	if took := time.Since(start); err != nil || took > 8*time.Second || len(got) != 1 || got[0] != "hi" {
		t.Fatalf("after %v: %q %v", took, got, err)
	}
}

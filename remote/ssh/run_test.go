package ssh

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

func TestRunStreamsLines(t *testing.T) {
	_, cfg := isolate(t)
	// With the login's rc file read, as on a real host: what it prints
	// (here without a newline) or costs must not reach the command's
	// output.
	srv := sshtest.Start(t, sshtest.Options{RC: "printf 'welcome to the GPU host'\nsleep 0.3\n"})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx := testCtx(t, 10*time.Second)
	var got []remote.Line
	start := time.Now()
	err := h.Run(ctx, "echo one; echo err >&2; printf 'two\\r\\nthree'; exit 3", nil, func(l remote.Line) { got = append(got, l) })
	took := time.Since(start)
	t.Logf("run took %v", took)
	if took < 300*time.Millisecond {
		t.Errorf("run took %v, less than the rc file's 0.3 s: bash did not read it", took)
	}
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Status != 3 {
		t.Fatalf("want exit status 3, got %v", err)
	}
	var out, errs []string
	for _, l := range got {
		if l.Stream == remote.Stdout {
			out = append(out, l.Text)
		} else {
			errs = append(errs, l.Text)
		}
	}
	if strings.Join(out, "|") != "one|two|three" || strings.Join(errs, "|") != "err" {
		t.Fatalf("stdout %q stderr %q", out, errs)
	}
	if ee.Stderr != "err" {
		t.Errorf("ExitError.Stderr = %q", ee.Stderr)
	}
}

// psMatches lists processes on the host whose command line has marker
// (zombies aside).
func psMatches(t *testing.T, h *Host, marker string) []string {
	t.Helper()
	out, err := remote.Output(testCtx(t, 10*time.Second), h, "ps -eo pid=,stat=,args=")
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var hits []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(f[1], "Z") || !strings.Contains(line, marker) || strings.Contains(line, "ps -eo") {
			continue
		}
		hits = append(hits, line)
	}
	return hits
}

func TestRunCancelLeavesNothing(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	marker := "9876" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	// A child in the background, a grandchild, and one that ignores TERM
	// (so only KILL after the grace period ends it).
	cmd := "sleep " + marker + "1 & sh -c 'sleep " + marker + "2; :' & sh -c 'trap \"\" TERM; sleep " + marker + "3; :' & echo started; wait"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		errc <- h.Run(ctx, cmd, nil, func(l remote.Line) {
			if l.Text == "started" {
				close(started)
			}
		})
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("command ended early: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("command did not start")
	}
	if n := len(psMatches(t, h, marker)); n < 3 {
		t.Fatalf("expected the sleeps to be running, found %d", n)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if left := psMatches(t, h, marker); len(left) > 0 {
		t.Fatalf("processes left on the host after cancel:\n%s", strings.Join(left, "\n"))
	}
}

func TestRunQuotedPath(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx := testCtx(t, 10*time.Second)
	dir := t.TempDir()
	// A name that breaks naive quoting: spaces, both quotes, $(...), `...`, ;.
	name := dir + "/it's a \"log\" $(touch " + dir + "/pwned) `id`; x.txt"
	if err := h.WriteFile(ctx, name, []byte("hello\nworld\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out, err := remote.Output(ctx, h, "cat -- "+remote.Quote(name)+" && stat -c %a -- "+remote.Quote(name))
	if err != nil {
		t.Fatal(err)
	}
	if out != "hello\nworld\n640\n" {
		t.Fatalf("got %q", out)
	}
	b, err := h.ReadFile(ctx, name)
	if err != nil || string(b) != "hello\nworld\n" {
		t.Fatalf("ReadFile: %q %v", b, err)
	}
	if _, err := remote.Output(ctx, h, "test ! -e "+remote.Quote(dir+"/pwned")); err != nil {
		t.Fatalf("the $(...) in the name was run by the shell: %v", err)
	}
	if _, err := h.ReadFile(ctx, dir+"/missing file"); err == nil || !strings.Contains(err.Error(), "No such file") {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}

func TestRunStdin(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx := testCtx(t, 10*time.Second)
	var out []string
	err := h.Run(ctx, "tr a-z A-Z", strings.NewReader("abc\ndef\n"), func(l remote.Line) { out = append(out, l.Text) })
	if err != nil || strings.Join(out, "|") != "ABC|DEF" {
		t.Fatalf("%q %v", out, err)
	}
	// A stdin that never ends does not keep Run waiting once the command
	// has exited.
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("first\n"))
	out = nil
	if err := h.Run(ctx, "head -n 1", pr, func(l remote.Line) { out = append(out, l.Text) }); err != nil || strings.Join(out, "|") != "first" {
		t.Fatalf("%q %v", out, err)
	}
}

// TestRunConnectionLost: the link drops under a running command. Run says
// so, and the command is stopped once the connection is back, since its
// caller was told it failed.
func TestRunConnectionLost(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	marker := "8765" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		errc <- h.Run(context.Background(), "echo started; sleep "+marker, nil, func(l remote.Line) {
			if l.Text == "started" {
				close(started)
			}
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("command did not start")
	}
	srv.Stop()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "connection lost") || !strings.Contains(err.Error(), srv.Addr()) {
			t.Fatalf("Run after the drop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the drop")
	}
	srv.Restart()
	waitUp(t, h)
	sshtest.WaitFor(t, 10*time.Second, "the orphaned command to be stopped", func() bool {
		return len(psMatches(t, h, marker)) == 0
	})
}

// TestRunManyAtOnce: more commands at once than sshd's MaxSessions (10)
// wait for a session instead of failing.
func TestRunManyAtOnce(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx := testCtx(t, 10*time.Second)
	errs := make(chan error, 14)
	for i := 0; i < 14; i++ {
		go func() {
			out, err := remote.Output(ctx, h, "sleep 0.3; echo ok")
			if err == nil && out != "ok\n" {
				err = errors.New("output " + out)
			}
			errs <- err
		}()
	}
	for i := 0; i < 14; i++ {
		if err := <-errs; err != nil {
			t.Errorf("command %d: %v", i, err)
		}
	}
}

// A Run whose context ends while the login is still reading its rc files
// returns then, not when the shell has started (sshd answers the session's
// close only once its shell exits); the command, once it starts, is
// stopped, and the connection keeps serving.
func TestRunCancelledDuringSlowLogin(t *testing.T) {
	_, cfg := isolate(t)
	dir := t.TempDir()
	rc, mark := dir+"/slow-rc.sh", dir+"/ran"
	if err := os.WriteFile(rc, []byte("sleep 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{Env: []string{"BASH_ENV=" + rc}})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := h.Run(ctx, "sleep 2; touch "+remote.QuotePath(mark), nil, nil)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || took > 2500*time.Millisecond {
		t.Fatalf("after %v: %v, want the context's end within a moment of it", took, err)
	}
	time.Sleep(8 * time.Second) // the rc's 4 s, the command's 2 s, and some
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the cancelled command ran to its end")
	}
	if out, err := remote.Output(testCtx(t, 20*time.Second), h, "echo still"); err != nil || strings.TrimSpace(out) != "still" {
		t.Errorf("the connection after the cancel: %q %v", out, err)
	}
}

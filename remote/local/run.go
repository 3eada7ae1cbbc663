package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// MaxLine is the longest line Run and Follow deliver in one piece; longer
// lines are split into pieces of this size.
const MaxLine = 1 << 20

// drainAfterExit is how long Run waits, after the shell exited, for output
// while none comes (a background child may hold its stdout open); output
// still being read or delivered is waited for, up to drainMax.
const (
	drainAfterExit = 2 * time.Second
	drainMax       = time.Minute
)

// Run runs cmd with sh -c in a new process group and streams its output
// line by line. Cancelling ctx sends SIGTERM to the whole group, then
// SIGKILL after the grace period, so no child is left behind.
func (h *Host) Run(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	if err := ctx.Err(); err != nil {
		return ctxErr(ctx, "run "+cmd)
	}
	c := exec.Command("sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if stdin != nil {
		c.Stdin = stdin
		c.WaitDelay = time.Second // do not hang on a stdin that never ends
	}
	outR, errR, err := startPiped(c)
	if err != nil {
		return fmt.Errorf("run %s: %w", cmd, err)
	}
	pgid := c.Process.Pid

	var mu sync.Mutex
	emit := func(s remote.Stream, text string) {
		mu.Lock()
		defer mu.Unlock()
		if out != nil {
			out(remote.Line{Stream: s, Text: text, At: time.Now()})
		}
	}
	tail := &lastLines{n: 8}
	var readers sync.WaitGroup
	var act activity
	readers.Add(2)
	go func() {
		defer readers.Done()
		readLines(act.reader(outR), act.deliver(func(t string) { emit(remote.Stdout, t) }))
	}()
	go func() {
		defer readers.Done()
		readLines(act.reader(errR), act.deliver(func(t string) { tail.add(t); emit(remote.Stderr, t) }))
	}()

	exited := make(chan struct{})
	killed := make(chan struct{})
	go h.stopGroupOnCancel(ctx, pgid, exited, killed)

	waitErr := c.Wait()
	close(exited)
	drain(&readers, &act, outR, errR)

	select {
	case <-killed:
		return ctxErr(ctx, "run "+cmd)
	default:
	}
	return exitError(cmd, waitErr, tail)
}

// startPiped starts c with its stdout and stderr on pipes and returns their
// read ends.
func startPiped(c *exec.Cmd) (outR, errR *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	c.Stdout, c.Stderr = outW, errW
	err = c.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, err
	}
	return outR, errR, nil
}

// stopGroupOnCancel stops the whole process group pgid when ctx ends before
// exited is closed: SIGTERM, then SIGKILL after the grace period (or at
// once when the leader is gone, for its children). It closes killed when
// it signals.
func (h *Host) stopGroupOnCancel(ctx context.Context, pgid int, exited, killed chan struct{}) {
	select {
	case <-exited:
		return
	case <-ctx.Done():
	}
	close(killed)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(h.grace())
	defer t.Stop()
	select {
	case <-exited:
		// The leader is gone; make sure its children are too.
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// drain waits for the readers after the shell exited, then closes the
// pipes: until they end, or no output has been read or delivered for
// drainAfterExit (a background child keeps the pipes open), or drainMax.
// A slow consumer of the output is not cut short.
func drain(readers *sync.WaitGroup, act *activity, outR, errR *os.File) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	tick := time.NewTicker(drainAfterExit)
	defer tick.Stop()
	limit := time.NewTimer(drainMax)
	defer limit.Stop()
	last := act.n.Load()
	for idle := false; !idle; {
		select {
		case <-done:
			outR.Close()
			errR.Close()
			return
		case <-limit.C:
			idle = true
		case <-tick.C:
			n := act.n.Load()
			idle = n == last && act.busy.Load() == 0
			last = n
		}
	}
	// Stop reading the pipes a background child holds open.
	outR.Close()
	errR.Close()
	<-done
}

// activity tells readers still delivering output from readers left
// waiting on a pipe no one writes to.
type activity struct {
	n    atomic.Int64 // reads that returned data, and deliveries done
	busy atomic.Int32 // deliveries under way
}

func (a *activity) reader(r io.Reader) io.Reader { return activeReader{r: r, a: a} }

// deliver wraps fn, counting its calls as activity.
func (a *activity) deliver(fn func(string)) func(string) {
	return func(s string) {
		a.busy.Add(1)
		defer func() { a.busy.Add(-1); a.n.Add(1) }()
		fn(s)
	}
}

type activeReader struct {
	r io.Reader
	a *activity
}

func (ar activeReader) Read(p []byte) (int, error) {
	n, err := ar.r.Read(p)
	if n > 0 {
		ar.a.n.Add(1)
	}
	return n, err
}

// exitError is Run's error for how the shell ended: nil, its exit status
// (128 + the signal when killed by one) with the last lines of stderr, or
// why waiting failed.
func exitError(cmd string, waitErr error, tail *lastLines) error {
	if waitErr == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		status := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
		return &remote.ExitError{Cmd: cmd, Status: status, Stderr: tail.String()}
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil
	}
	return fmt.Errorf("run %s: %w", cmd, waitErr)
}

// readLines calls fn for every line of r (without its newline, and without
// a trailing \r), splitting lines longer than MaxLine.
func readLines(r io.Reader, fn func(string)) {
	br := bufio.NewReaderSize(r, 64*1024)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			long = append(long, chunk[:len(chunk)-1]...)
			fn(strings.TrimSuffix(string(long), "\r"))
			long = long[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, chunk...)
			for len(long) >= MaxLine {
				fn(string(long[:MaxLine]))
				long = append(long[:0], long[MaxLine:]...)
			}
		default:
			long = append(long, chunk...)
			if len(long) > 0 {
				fn(strings.TrimSuffix(string(long), "\r"))
			}
			return
		}
	}
}

// lastLines keeps the last n lines given to it.
type lastLines struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	l.lines = append(l.lines, s)
	if len(l.lines) > l.n {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

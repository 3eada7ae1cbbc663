package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/profdeck/profdeck/remote"
)

// pgidMarker starts the first line a command prints: the id of the
// process group sshd made for it, so it can be stopped as a whole.
const pgidMarker = "@@profdeck-pgid "

// proc is a command running on the host in its own process group (sshd
// makes each session's shell a session and group leader).
type proc struct {
	h      *Host
	c      *conn
	sess   *gossh.Session
	pgid   int
	stdout *bufio.Reader // positioned after the marker line
	stderr io.Reader
	waited chan struct{}
	err    error // from Wait, valid once waited is closed
}

// qpath quotes a remote path for the shell, keeping a leading "~/"
// meaning the login's home directory.
func qpath(p string) string { return remote.QuotePath(p) }

// start runs cmd in the login shell, after a line that reports its process
// group. stdin, when not nil, is copied to the command and then closed.
func (h *Host) start(ctx context.Context, c *conn, cmd string, stdin io.Reader) (_ *proc, err error) {
	// sshd allows MaxSessions (10) channels per connection; wait for a
	// slot rather than fail. Kill sessions do not take one.
	select {
	case c.slots <- struct{}{}:
	case <-c.done:
		return nil, h.wrap("opening a session", c.reason())
	case <-ctx.Done():
		return nil, h.wrap("waiting for a free session", ctx.Err())
	}
	release := func() { <-c.slots }
	waiting := false // a goroutine waits for the shell and frees the slot
	defer func() {
		if err != nil && !waiting {
			release()
		}
	}()
	sess, err := newSession(ctx, c)
	if err != nil {
		return nil, h.wrap("opening a session", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, h.wrap("stdout", err)
	}
	stderr, err := sess.StderrPipe()
	if err != nil {
		sess.Close()
		return nil, h.wrap("stderr", err)
	}
	var stdinW io.WriteCloser
	if stdin != nil {
		if stdinW, err = sess.StdinPipe(); err != nil {
			sess.Close()
			return nil, h.wrap("stdin", err)
		}
	}
	script := "printf '" + pgidMarker + "%s\\n' \"$$\"\n" + cmd
	if err := sess.Start(script); err != nil {
		sess.Close()
		return nil, h.wrap("starting "+shorten(cmd), err)
	}
	p := &proc{h: h, c: c, sess: sess, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: stderr, waited: make(chan struct{})}
	if stdinW != nil {
		go func() {
			io.Copy(stdinW, stdin)
			stdinW.Close()
		}()
	}
	got := p.readPGID()
	select {
	case err = <-got:
	case <-ctx.Done():
		// sshd answers the close only once the shell has exited, and a
		// login's rc files may take long: return now, and stop the
		// command (freeing its slot) when the shell says it started.
		sess.Close()
		waiting = true
		go func() {
			if <-got == nil {
				p.stop()
			}
			release()
		}()
		return nil, h.wrap("starting "+shorten(cmd), ctx.Err())
	}
	if err != nil {
		sess.Close()
		return nil, h.wrap("starting "+shorten(cmd), err)
	}
	go func() {
		p.err = sess.Wait()
		close(p.waited)
		release()
	}()
	return p, nil
}

// readPGID reads the shell's first stdout lines until the one that
// reports its process group, and sends nil (p.pgid set) or why not.
func (p *proc) readPGID() <-chan error {
	got := make(chan error, 1)
	go func() {
		for {
			line, err := p.stdout.ReadString('\n')
			// rc files may print first, even without a newline.
			if i := strings.Index(line, pgidMarker); i >= 0 && strings.HasSuffix(line, "\n") {
				p.pgid, _ = strconv.Atoi(strings.TrimSpace(line[i+len(pgidMarker):]))
				got <- nil
				return
			}
			if err != nil {
				got <- fmt.Errorf("no process group line from the shell: %w", err)
				return
			}
		}
	}()
	return got
}

// newSession opens a session, retrying for a while when sshd refuses it:
// sshd frees a session slot a moment after the client sees it end.
func newSession(ctx context.Context, c *conn) (*gossh.Session, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		sess, err := c.client.NewSession()
		var oe *gossh.OpenChannelError
		if err == nil || !errors.As(err, &oe) || time.Now().After(deadline) {
			return sess, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the command's whole process group: TERM, then KILL after the
// grace period. sshd refuses the "signal" request for root logins, so the
// group is also killed from a fresh session. If the connection is gone the
// group is remembered and killed after the reconnect.
func (p *proc) stop() {
	p.sess.Signal(gossh.SIGTERM)
	select {
	case <-p.waited:
		return
	case <-time.After(50 * time.Millisecond):
	}
	if p.pgid > 1 {
		if err := p.h.killGroup(p.c, p.pgid); err != nil {
			p.h.addOrphan(p.pgid)
		}
	}
	p.sess.Close()
}

// result returns Wait's error once the session has ended, waiting up to
// d; ended is false if it has not.
func (p *proc) result(d time.Duration) (ended bool, err error) {
	select {
	case <-p.waited:
		return true, p.err
	case <-time.After(d):
		return false, nil
	}
}

// waitStopped waits a little for a stopped command's session to end; a
// dead link may hold it until the keepalive gives up.
func (p *proc) waitStopped() bool {
	select {
	case <-p.waited:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func (h *Host) grace() time.Duration {
	if h.opt.KillGrace > 0 {
		return h.opt.KillGrace
	}
	return 3 * time.Second
}

// killGroup sends TERM to process group pgid, and KILL if it is still there
// after the grace period.
func (h *Host) killGroup(c *conn, pgid int) error {
	ticks := int(h.grace() / (100 * time.Millisecond))
	script := fmt.Sprintf("P=%d; kill -TERM -- -$P 2>/dev/null || exit 0; i=0; "+
		"while kill -0 -- -$P 2>/dev/null; do i=$((i+1)); if [ $i -ge %d ]; then kill -KILL -- -$P 2>/dev/null; exit 0; fi; sleep 0.1; done",
		pgid, ticks)
	sess, err := newSession(context.Background(), c)
	if err != nil {
		return err
	}
	defer sess.Close()
	done := make(chan error, 1)
	go func() { done <- sess.Run(script) }()
	select {
	case err := <-done:
		var ee *gossh.ExitError
		if errors.As(err, &ee) {
			return nil
		}
		return err
	case <-time.After(h.grace() + 10*time.Second):
		return errors.New("kill did not finish")
	}
}

func (h *Host) addOrphan(pgid int) {
	h.mu.Lock()
	h.orphans = append(h.orphans, pgid)
	h.mu.Unlock()
}

// killOrphans stops the process groups of commands whose connection was
// lost: their callers were told they failed, so nothing may keep running.
func (h *Host) killOrphans(ctx context.Context, c *conn) {
	h.mu.Lock()
	list := h.orphans
	h.orphans = nil
	h.mu.Unlock()
	for _, pg := range list {
		if ctx.Err() != nil {
			return
		}
		if err := h.killGroup(c, pg); err != nil {
			h.addOrphan(pg)
		}
	}
}

// lost reports whether err from Wait means the connection went away
// rather than the command ending.
func lost(err error) bool {
	var missing *gossh.ExitMissingError
	return errors.As(err, &missing) || errors.Is(err, io.EOF)
}

var signalNumbers = map[gossh.Signal]int{
	gossh.SIGHUP: 1, gossh.SIGINT: 2, gossh.SIGQUIT: 3, gossh.SIGILL: 4, gossh.SIGABRT: 6,
	gossh.SIGFPE: 8, gossh.SIGKILL: 9, gossh.SIGSEGV: 11, gossh.SIGPIPE: 13, gossh.SIGALRM: 14,
	gossh.SIGTERM: 15, gossh.SIGUSR1: 10, gossh.SIGUSR2: 12,
}

// exitError turns Wait's error into a remote.ExitError, or a connection
// error naming the host.
func (h *Host) exitError(cmd string, err error, stderrTail string) error {
	if err == nil {
		return nil
	}
	var ee *gossh.ExitError
	if errors.As(err, &ee) {
		status := ee.ExitStatus()
		if sig := ee.Signal(); sig != "" {
			status = 128 + signalNumbers[gossh.Signal(sig)]
		}
		return &remote.ExitError{Cmd: cmd, Status: status, Stderr: stderrTail}
	}
	return h.wrap("connection lost while running "+shorten(cmd), err)
}

func shorten(cmd string) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if len(cmd) > 60 {
		return strconv.Quote(cmd[:57] + "...")
	}
	return strconv.Quote(cmd)
}

// Run runs cmd in the login shell on the host and streams its stdout and
// stderr lines to out as they arrive. Cancelling ctx stops the command and
// everything it started (its process group).
func (h *Host) Run(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	c, err := h.conn(ctx)
	if err != nil {
		return h.wrap("running "+shorten(cmd), err)
	}
	p, err := h.start(ctx, c, cmd, stdin)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errTail []string
	send := func(s remote.Stream) func(line, raw []byte) {
		return func(b, _ []byte) {
			l := remote.Line{Stream: s, Text: string(b), At: time.Now()}
			mu.Lock()
			defer mu.Unlock()
			if s == remote.Stderr {
				errTail = append(errTail, l.Text)
				if len(errTail) > 5 {
					errTail = errTail[1:]
				}
			}
			if out != nil {
				out(l)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); readLines(p.stdout, send(remote.Stdout)) }()
	go func() { defer wg.Done(); readLines(p.stderr, send(remote.Stderr)) }()
	select {
	case <-p.waited:
	case <-ctx.Done():
		p.stop()
		if p.waitStopped() {
			wg.Wait()
		}
		return h.wrap("running "+shorten(cmd), ctx.Err())
	}
	wg.Wait()
	if p.err != nil && !isExit(p.err) {
		if lost(p.err) || c.isDone() {
			h.addOrphan(p.pgid)
		}
	}
	mu.Lock()
	tail := strings.Join(errTail, "\n")
	mu.Unlock()
	return h.exitError(cmd, p.err, tail)
}

// exitMessage is what a failed command said on stderr, or its exit status
// when it said nothing.
func exitMessage(stderr string, err error) error {
	if s := strings.TrimSpace(stderr); s != "" {
		return errors.New(s)
	}
	return err
}

func isExit(err error) bool {
	var ee *gossh.ExitError
	return errors.As(err, &ee)
}

func (c *conn) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ReadFile returns the whole remote file.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, h.wrap("reading "+path, err)
	}
	cmd := "exec cat -- " + qpath(path)
	p, err := h.start(ctx, c, cmd, nil)
	if err != nil {
		return nil, err
	}
	var data, errb bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&data, p.stdout) }()
	go func() { defer wg.Done(); keepStderr(&errb, p.stderr) }()
	select {
	case <-p.waited:
	case <-ctx.Done():
		p.stop()
		p.waitStopped()
		return nil, h.wrap("reading "+path, ctx.Err())
	}
	wg.Wait()
	if p.err != nil {
		if isExit(p.err) {
			return nil, h.wrap("reading "+path, exitMessage(strings.TrimPrefix(errb.String(), "cat: "), p.err))
		}
		return nil, h.wrap("reading "+path, p.err)
	}
	return data.Bytes(), nil
}

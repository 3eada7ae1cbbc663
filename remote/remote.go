// Package remote is profdeck's one idea of "a host where commands run and files
// live". Phases use the Host interface only, so the same engine runs against
// this machine (remote/local), a GPU server over SSH (remote/ssh), or the
// built-in simulated deployment (remote/sim).
package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// Stream says which output a line came from.
type Stream int

// The two output streams of a command.
const (
	Stdout Stream = iota
	Stderr
)

// Line is one line of a command's output or of a followed file, without its
// trailing newline.
type Line struct {
	Stream Stream
	Text   string
	At     time.Time
}

// FollowEvent is one item from Follow: a line, or a notice that the file was
// truncated or replaced and reading started over from its beginning.
type FollowEvent struct {
	Line   string
	Offset int64 // byte offset just past this line
	Reset  bool  // the file was truncated or replaced; Line is empty
	Note   string
}

// Host is a place where commands run and files live.
//
// Every method honours ctx: cancelling it stops the command (and its
// children) or the follow, and the method returns ctx.Err() wrapped.
type Host interface {
	// Name is how the host is shown to the operator ("sim", "local", "gpu1").
	Name() string
	// Run runs a shell command line and calls out for every line of its
	// stdout and stderr as they arrive (out may be nil). It returns when the
	// command exits; a non-zero exit is an *ExitError.
	Run(ctx context.Context, cmd string, stdin io.Reader, out func(Line)) error
	// ReadFile returns the whole file.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile writes the whole file (creating parent directories).
	WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error
	// Follow reads path from byte offset from (like tail -F) and calls out for
	// every complete line, until ctx ends. A missing file is waited for.
	Follow(ctx context.Context, path string, from int64, out func(FollowEvent)) error
	// DialContext opens a TCP connection to addr as seen from the host, so a
	// server bound to the host's localhost is reachable.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// Close releases the host's resources.
	Close() error
}

// StateReporter is implemented by hosts whose connection can go up and down
// (SSH). States delivers every change; the channel is closed by Close.
type StateReporter interface {
	States() <-chan State
}

// State is one change in a host connection's state.
type State struct {
	Host    string
	State   string // "connecting", "up", "down", "backoff", "failed"
	RTT     time.Duration
	Err     error
	RetryIn time.Duration
	At      time.Time
}

// Forwarder is implemented by hosts whose DialContext carries connections
// through a connection to the host (SSH) rather than from this machine.
type Forwarder interface {
	// Forwarding names that connection and says how its far side was made
	// to send small writes at once ("pty", "exec"), or "none" and why not.
	Forwarding() (via, nodelay string, err error)
}

// Simulated is implemented by hosts that are not real, so every view of them
// can say SIMULATED.
type Simulated interface {
	Simulated() bool
}

// IsSimulated reports whether h is a simulated host.
func IsSimulated(h Host) bool {
	s, ok := h.(Simulated)
	return ok && s.Simulated()
}

// SpecError is a host that cannot work as given: its name, port or SSH
// configuration is wrong (a bad port, an option where a name goes, an
// unsupported directive). It is the operator's input, never the network's.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Cmd    string
	Status int
	Stderr string // the last lines of stderr, for the message
}

// Error gives the status, the command and the last lines of stderr.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("command exited with status %d: %s", e.Status, e.Cmd)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Output runs cmd and returns its stdout, joined with newlines; stderr lines
// go into the error when it fails.
func Output(ctx context.Context, h Host, cmd string) (string, error) {
	var out, errb strings.Builder
	err := h.Run(ctx, cmd, nil, func(l Line) {
		if l.Stream == Stdout {
			out.WriteString(l.Text)
			out.WriteByte('\n')
		} else {
			errb.WriteString(l.Text)
			errb.WriteByte('\n')
		}
	})
	if ee, ok := err.(*ExitError); ok && ee.Stderr == "" {
		ee.Stderr = lastLines(errb.String(), 5)
	}
	return out.String(), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Quote returns s quoted for a POSIX shell, so that the shell passes it as
// one word, unchanged. Every remote argument built from user input goes
// through it.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuotePath quotes a file path like Quote, but keeps a leading "~/" (or a
// lone "~") meaning the home directory of the user the command runs as, as
// every Host's file methods read it.
func QuotePath(p string) string {
	switch {
	case p == "~":
		return `"$HOME"`
	case strings.HasPrefix(p, "~/"):
		return `"$HOME"/` + Quote(p[2:])
	}
	return Quote(p)
}

// QuoteArgs quotes each argument and joins them with spaces.
func QuoteArgs(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

package sim

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// CommandFunc runs one simulated command. It writes output lines with out
// (use d.Stdout / d.Stderr helpers or build remote.Line values) and returns
// nil, a *remote.ExitError, or the context's error.
type CommandFunc func(ctx context.Context, d *Deployment, cmd string, stdin io.Reader, out func(remote.Line)) error

type command struct {
	name  string
	match func(cmd string) bool
	run   CommandFunc
}

var (
	regMu      sync.RWMutex
	registered []command
	startHooks []func(*Deployment)
)

// RegisterStartHook adds a function that Start calls on every new
// deployment before it returns (e.g. to add HTTP endpoints with Handle).
// Call it from init().
func RegisterStartHook(fn func(*Deployment)) {
	regMu.Lock()
	defer regMu.Unlock()
	startHooks = append(startHooks, fn)
}

func runStartHooks(d *Deployment) {
	regMu.RLock()
	hooks := slices.Clone(startHooks)
	regMu.RUnlock()
	for _, h := range hooks {
		h(d)
	}
}

// RegisterCommand adds a simulated shell command. Call it from init() in the
// file that implements the command. Registered commands are tried in
// registration order before the built-in ones; the first whose match returns
// true runs. name is for error messages and tests.
func RegisterCommand(name string, match func(cmd string) bool, run CommandFunc) {
	if match == nil || run == nil {
		panic("sim: RegisterCommand " + name + ": nil match or run")
	}
	regMu.Lock()
	defer regMu.Unlock()
	registered = append(registered, command{name: name, match: match, run: run})
}

// lookup returns the first registered command that matches cmd.
func lookup(cmd string) (command, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	for _, c := range registered {
		if c.match(cmd) {
			return c, true
		}
	}
	return command{}, false
}

// Stdout is a helper for CommandFunc: it sends each line of text (split on
// newlines) as stdout.
func Stdout(out func(remote.Line), text string) { emit(out, remote.Stdout, text) }

// Stderr is like Stdout for stderr.
func Stderr(out func(remote.Line), text string) { emit(out, remote.Stderr, text) }

func emit(out func(remote.Line), s remote.Stream, text string) {
	text = strings.TrimSuffix(text, "\n")
	now := time.Now()
	for _, l := range strings.Split(text, "\n") {
		out(remote.Line{Stream: s, Text: l, At: now})
	}
}

// Exit returns the error of a command that exited with status (nil for 0).
func Exit(cmd string, status int, stderr string) error {
	if status == 0 {
		return nil
	}
	return &remote.ExitError{Cmd: cmd, Status: status, Stderr: stderr}
}

// dispatch runs cmd: a registered command, the server launch, or a sequence
// of built-in commands joined with &&, || and ;.
func (d *Deployment) dispatch(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	cmd = strings.TrimSpace(cmd)
	if c, ok := lookup(cmd); ok {
		return c.run(ctx, d, cmd, stdin, out)
	}
	if isLaunch(cmd) {
		return d.runLaunch(cmd, out)
	}
	parts, ops := splitList(cmd)
	if len(parts) > 1 {
		var err error
		for i, p := range parts {
			if i > 0 {
				switch ops[i-1] {
				case "&&":
					if err != nil {
						continue
					}
				case "||":
					if err == nil {
						continue
					}
				}
			}
			if e := ctx.Err(); e != nil {
				return e
			}
			err = d.dispatch(ctx, p, stdin, out)
			if err != nil && ctx.Err() != nil {
				return err
			}
		}
		return err
	}
	return d.builtin(ctx, cmd, stdin, out)
}

// splitList splits a command line on top-level &&, || and ; (outside
// quotes), returning the parts and the operators between them.
func splitList(cmd string) (parts, ops []string) {
	var cur strings.Builder
	var quote byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(c)
				i++
				cur.WriteByte(cmd[i])
				continue
			}
			if c == quote {
				quote = 0
			}
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
		case c == '\\' && i+1 < len(cmd):
			cur.WriteByte(c)
			i++
			cur.WriteByte(cmd[i])
		case c == ';':
			parts, ops = append(parts, strings.TrimSpace(cur.String())), append(ops, ";")
			cur.Reset()
		case (c == '&' || c == '|') && i+1 < len(cmd) && cmd[i+1] == c:
			parts, ops = append(parts, strings.TrimSpace(cur.String())), append(ops, string([]byte{c, c}))
			cur.Reset()
			i++
		default:
			cur.WriteByte(c)
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" || len(parts) == 0 {
		parts = append(parts, s)
	} else {
		ops = ops[:len(ops)-1]
	}
	return parts, ops
}

// Words splits a simple command into words the way sh does for quoting
// (single quotes, double quotes, backslashes); it does no expansion.
func Words(cmd string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(cmd) && strings.IndexByte("\"\\$`", cmd[i+1]) >= 0:
				i++
				cur.WriteByte(cmd[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			inWord = true
		case c == '\\' && i+1 < len(cmd):
			i++
			cur.WriteByte(cmd[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

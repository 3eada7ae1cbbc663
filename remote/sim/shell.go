package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/profdeck/profdeck/remote"
)

// builtin runs a simple command or pipeline of the simulated shell.
func (d *Deployment) builtin(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	stages := splitPipe(cmd)
	if len(stages) > 1 {
		var in io.Reader = stdin
		for i, st := range stages {
			if i == len(stages)-1 {
				return d.simple(ctx, st, in, out)
			}
			var buf bytes.Buffer
			err := d.simple(ctx, st, in, func(l remote.Line) {
				if l.Stream == remote.Stdout {
					buf.WriteString(l.Text)
					buf.WriteByte('\n')
				} else {
					out(l)
				}
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			_ = err // like sh without pipefail, only the last status counts
			in = &buf
		}
	}
	return d.simple(ctx, cmd, stdin, out)
}

// splitPipe splits on top-level single | characters.
func splitPipe(cmd string) []string {
	var parts []string
	start := 0
	topLevel(cmd, func(i int) int {
		if cmd[i] == '|' && (i+1 >= len(cmd) || cmd[i+1] != '|') && (i == 0 || cmd[i-1] != '|') {
			parts = append(parts, strings.TrimSpace(cmd[start:i]))
			start = i + 1
		}
		return i
	})
	return append(parts, strings.TrimSpace(cmd[start:]))
}

// topLevel calls f with the index of every byte of cmd that is outside
// quotes and not escaped by a backslash, in order. f returns the index of
// the last byte it used (i when only cmd[i]); the scan goes on after it.
func topLevel(cmd string, f func(i int) int) {
	var q byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			} else if c == '\\' && q == '"' {
				i++
			}
		case c == '\'' || c == '"':
			q = c
		case c == '\\':
			i++
		default:
			i = f(i)
		}
	}
}

// redirect is one output redirection of a simple command.
type redirect struct {
	path   string
	append bool
}

var reAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// simple runs one simple command: words, with > and >> handled and 2>...
// ignored.
func (d *Deployment) simple(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	if c, ok := d.byLine(cmd); ok {
		return c.run(ctx, d, call{cmd: cmd, stdin: stdin, out: out})
	}
	words := Words(cmd)
	var args []string
	var redir *redirect
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "2>&1" || w == "1>&2" || w == "&":
		case w == "2>" || w == "2>>" || w == "<":
			i++
		case strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "<"):
		case w == ">" || w == ">>" || w == "1>":
			if i+1 < len(words) {
				redir = &redirect{path: words[i+1], append: w == ">>"}
				i++
			}
		case strings.HasPrefix(w, ">>"):
			redir = &redirect{path: w[2:], append: true}
		case strings.HasPrefix(w, ">"):
			redir = &redirect{path: w[1:]}
		default:
			args = append(args, w)
		}
	}
	// Leading VAR=value assignments and wrappers that change nothing here.
	for len(args) > 0 && (reAssign.MatchString(args[0]) || args[0] == "sudo" || args[0] == "exec" || args[0] == "nohup") {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil
	}
	if redir != nil && redir.path != "/dev/null" {
		var buf bytes.Buffer
		err := d.exec(ctx, cmd, args, stdin, func(l remote.Line) {
			if l.Stream == remote.Stdout {
				buf.WriteString(l.Text)
				buf.WriteByte('\n')
			} else {
				out(l)
			}
		})
		if redir.append {
			d.fs.appendTo(redir.path, buf.Bytes())
		} else if werr := d.fs.write(redir.path, buf.Bytes(), 0o644); werr != nil {
			return Exit(cmd, 1, fmt.Sprintf("sh: cannot create %s: %v", redir.path, werr))
		}
		return err
	}
	if redir != nil {
		return d.exec(ctx, cmd, args, stdin, func(l remote.Line) {
			if l.Stream == remote.Stderr {
				out(l)
			}
		})
	}
	return d.exec(ctx, cmd, args, stdin, out)
}

// dispatch runs cmd: a command found by its line, the server launch, or a
// sequence of commands joined with &&, || and ;.
func (d *Deployment) dispatch(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	cmd = strings.TrimSpace(cmd)
	if c, ok := d.byLine(cmd); ok {
		return c.run(ctx, d, call{cmd: cmd, stdin: stdin, out: out})
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

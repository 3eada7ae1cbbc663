package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

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
	var q byte
	start := 0
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
		case c == '|' && (i+1 >= len(cmd) || cmd[i+1] != '|') && (i == 0 || cmd[i-1] != '|'):
			parts = append(parts, strings.TrimSpace(cmd[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(cmd[start:]))
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
	if c, ok := lookup(cmd); ok {
		return c.run(ctx, d, cmd, stdin, out)
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

// exec runs a built-in command by name.
func (d *Deployment) exec(ctx context.Context, cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	fail := func(status int, msg string) error {
		Stderr(out, msg)
		return Exit(cmd, status, msg)
	}
	switch args[0] {
	case "true", ":":
		return nil
	case "sh", "bash":
		if len(args) >= 3 && (args[1] == "-c" || args[1] == "-lc") {
			return d.dispatch(ctx, args[2], stdin, out)
		}
		return fail(2, args[0]+": only "+args[0]+" -c COMMAND is simulated")
	case "env":
		rest := args[1:]
		for len(rest) > 0 && (reAssign.MatchString(rest[0]) || rest[0] == "-i") {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return nil
		}
		return d.dispatch(ctx, remote.QuoteArgs(rest...), stdin, out)
	case "timeout":
		rest := args[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:]
		}
		if len(rest) < 2 {
			return fail(125, "timeout: missing operand")
		}
		dur, err := time.ParseDuration(rest[0])
		if err != nil {
			secs, perr := strconv.ParseFloat(rest[0], 64)
			if perr != nil {
				return fail(125, fmt.Sprintf("timeout: invalid time interval '%s'", rest[0]))
			}
			dur = time.Duration(secs * float64(time.Second))
		}
		tctx, cancel := context.WithTimeout(ctx, dur)
		defer cancel()
		err = d.dispatch(tctx, remote.QuoteArgs(rest[1:]...), stdin, out)
		if tctx.Err() != nil && ctx.Err() == nil {
			return Exit(cmd, 124, "")
		}
		return err
	case "cd":
		if len(args) > 1 && !d.fs.exists(args[1]) {
			return fail(2, fmt.Sprintf("sh: cd: can't cd to %s", args[1]))
		}
		return nil
	case "false":
		return Exit(cmd, 1, "")
	case "echo":
		a := args[1:]
		nl := true
		if len(a) > 0 && a[0] == "-n" {
			a, nl = a[1:], false
		}
		s := strings.Join(a, " ")
		if s == "$!" {
			s = strconv.Itoa(d.ServerPID())
		}
		if nl || s != "" {
			Stdout(out, s)
		}
		return nil
	case "nvidia-smi":
		return d.nvidiaSMI(ctx, cmd, args[1:], out)
	case "kill":
		return d.kill(cmd, args[1:], out)
	case "pkill":
		if strings.Contains(cmd, "vllm") && d.stop(signalOf(args[1:])) {
			return nil
		}
		return Exit(cmd, 1, "")
	case "docker":
		return d.docker(cmd, args[1:], out)
	case "cat":
		if len(args) == 1 {
			return copyLines(stdin, out)
		}
		for _, p := range args[1:] {
			b, err := d.fs.read(p)
			if err != nil {
				return fail(1, fmt.Sprintf("cat: %s: No such file or directory", p))
			}
			Stdout(out, string(b))
		}
		return nil
	case "tee":
		var buf bytes.Buffer
		if stdin != nil {
			_, _ = io.Copy(&buf, stdin)
		}
		for _, p := range args[1:] {
			if !strings.HasPrefix(p, "-") {
				if err := d.fs.write(p, buf.Bytes(), 0o644); err != nil {
					return fail(1, fmt.Sprintf("tee: %s: %v", p, err))
				}
			}
		}
		if buf.Len() > 0 {
			Stdout(out, buf.String())
		}
		return nil
	case "head", "tail":
		return d.headTail(cmd, args, stdin, out)
	case "grep":
		return grep(cmd, args[1:], stdin, out)
	case "wc":
		var buf bytes.Buffer
		if stdin != nil {
			_, _ = io.Copy(&buf, stdin)
		}
		Stdout(out, strconv.Itoa(bytes.Count(buf.Bytes(), []byte("\n"))))
		return nil
	case "test", "[":
		a := args[1:]
		if args[0] == "[" && len(a) > 0 && a[len(a)-1] == "]" {
			a = a[:len(a)-1]
		}
		if len(a) == 2 && (a[0] == "-e" || a[0] == "-f" || a[0] == "-d" || a[0] == "-r" || a[0] == "-s") {
			if d.fs.exists(a[1]) {
				return nil
			}
			return Exit(cmd, 1, "")
		}
		return fail(2, "sh: test: only -e/-f/-d/-r/-s FILE are simulated")
	case "mkdir":
		for _, p := range args[1:] {
			if !strings.HasPrefix(p, "-") {
				d.fs.mkdirAll(p)
			}
		}
		return nil
	case "rm":
		for _, p := range args[1:] {
			if !strings.HasPrefix(p, "-") && !d.fs.remove(p) && !strings.Contains(strings.Join(args, " "), "-f") {
				return fail(1, fmt.Sprintf("rm: cannot remove '%s': No such file or directory", p))
			}
		}
		return nil
	case "ls":
		dirs := []string{}
		for _, p := range args[1:] {
			if !strings.HasPrefix(p, "-") {
				dirs = append(dirs, p)
			}
		}
		if len(dirs) == 0 {
			dirs = []string{"/root"}
		}
		for _, p := range dirs {
			names, ok := d.fs.list(p)
			if !ok {
				return fail(2, fmt.Sprintf("ls: cannot access '%s': No such file or directory", p))
			}
			if len(names) > 0 {
				Stdout(out, strings.Join(names, "\n"))
			}
		}
		return nil
	case "date":
		Stdout(out, dateCmd(time.Now().UTC(), args[1:]))
		return nil
	case "uname":
		if len(args) > 1 && args[1] == "-a" {
			Stdout(out, "Linux gpu-sim 6.8.0-sim #1 SMP PREEMPT_DYNAMIC SIMULATED x86_64 x86_64 x86_64 GNU/Linux")
		} else {
			Stdout(out, "Linux")
		}
		return nil
	case "hostname":
		Stdout(out, "gpu-sim")
		return nil
	case "whoami":
		Stdout(out, "root")
		return nil
	case "pwd":
		Stdout(out, "/root")
		return nil
	case "nproc":
		Stdout(out, "192")
		return nil
	case "sleep":
		if len(args) < 2 {
			return fail(1, "sleep: missing operand")
		}
		sec, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			return fail(1, fmt.Sprintf("sleep: invalid time interval '%s'", args[1]))
		}
		t := time.NewTimer(time.Duration(sec * float64(time.Second)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	case "which", "command":
		a := args[1:]
		if len(a) > 0 && a[0] == "-v" {
			a = a[1:]
		}
		if len(a) == 1 {
			if p, ok := knownBinaries[a[0]]; ok {
				Stdout(out, p)
				return nil
			}
		}
		return Exit(cmd, 1, "")
	}
	return fail(127, fmt.Sprintf("sh: %s: command not found (simulated host)", args[0]))
}

var knownBinaries = map[string]string{
	"nvidia-smi": "/usr/bin/nvidia-smi", "sh": "/bin/sh", "cat": "/bin/cat", "tail": "/usr/bin/tail",
	"kill": "/bin/kill", "docker": "/usr/bin/docker", "python3": "/usr/bin/python3",
	"vllm": "/usr/local/bin/vllm", "torchrun": "/usr/local/bin/torchrun",
}

func copyLines(r io.Reader, out func(remote.Line)) error {
	if r == nil {
		return nil
	}
	b, err := io.ReadAll(r)
	if len(b) > 0 {
		Stdout(out, string(b))
	}
	return err
}

// headTail implements head/tail -n N, tail -c +N, on a file or stdin.
func (d *Deployment) headTail(cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	n, fromByte, file := 10, int64(-1), ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-n" || a == "-c") && i+1 < len(args):
			v := args[i+1]
			i++
			if a == "-c" && strings.HasPrefix(v, "+") {
				k, err := strconv.ParseInt(v[1:], 10, 64)
				if err != nil || k < 1 {
					k = 1
				}
				fromByte = k - 1
				continue
			}
			if k, err := strconv.Atoi(strings.TrimPrefix(v, "-")); err == nil {
				n = k
			}
		case strings.HasPrefix(a, "-n") && len(a) > 2:
			if k, err := strconv.Atoi(a[2:]); err == nil {
				n = k
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if k, err := strconv.Atoi(a[1:]); err == nil {
				n = k
			}
		default:
			file = a
		}
	}
	var data []byte
	if file != "" {
		b, err := d.fs.read(file)
		if err != nil {
			msg := fmt.Sprintf("%s: cannot open '%s' for reading: No such file or directory", args[0], file)
			Stderr(out, msg)
			return Exit(cmd, 1, msg)
		}
		data = b
	} else if stdin != nil {
		data, _ = io.ReadAll(stdin)
	}
	if fromByte >= 0 {
		if fromByte < int64(len(data)) {
			Stdout(out, string(data[fromByte:]))
		}
		return nil
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if args[0] == "head" && len(lines) > n {
		lines = lines[:n]
	} else if args[0] == "tail" && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	Stdout(out, strings.Join(lines, "\n"))
	return nil
}

// grep implements grep [-E] [-F] [-v] [-c] [-i] PATTERN on stdin.
func grep(cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	invert, count, fixed, icase := false, false, false, false
	var pat string
	havePat := false
	for _, a := range args {
		if !havePat && strings.HasPrefix(a, "-") && len(a) > 1 {
			invert = invert || strings.Contains(a, "v")
			count = count || strings.Contains(a, "c")
			fixed = fixed || strings.Contains(a, "F")
			icase = icase || strings.Contains(a, "i")
			continue
		}
		if !havePat {
			pat, havePat = a, true
		}
	}
	if fixed {
		pat = regexp.QuoteMeta(pat)
	}
	if icase {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		msg := "grep: invalid pattern: " + err.Error()
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	var data []byte
	if stdin != nil {
		data, _ = io.ReadAll(stdin)
	}
	matched := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if re.MatchString(l) != invert {
			matched++
			if !count {
				Stdout(out, l)
			}
		}
	}
	if count {
		Stdout(out, strconv.Itoa(matched))
	}
	if matched == 0 {
		return Exit(cmd, 1, "")
	}
	return nil
}

// signalOf finds the signal among pkill's arguments: KILL or TERM.
func signalOf(args []string) string {
	for i, a := range args {
		u := strings.TrimPrefix(strings.ToUpper(strings.TrimLeft(a, "-")), "SIG")
		if a == "-s" && i+1 < len(args) {
			u = strings.TrimPrefix(strings.ToUpper(args[i+1]), "SIG")
		} else if !strings.HasPrefix(a, "-") {
			continue
		}
		if u == "9" || u == "KILL" {
			return "KILL"
		}
	}
	return "TERM"
}

// kill stops the server when one of its pids (or its process group, as
// -PGID) is named; kill -0 tests liveness.
func (d *Deployment) kill(cmd string, args []string, out func(remote.Line)) error {
	sig := "TERM"
	var targets []string
	sawDashDash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case sawDashDash:
			targets = append(targets, a)
		case a == "--":
			sawDashDash = true
		case a == "-s" && i+1 < len(args):
			sig = strings.TrimPrefix(strings.ToUpper(args[i+1]), "SIG")
			i++
		case strings.HasPrefix(a, "-") && i == 0 && len(args) > 1:
			sig = strings.TrimPrefix(strings.ToUpper(a[1:]), "SIG")
			if sig == "9" {
				sig = "KILL"
			}
		default:
			targets = append(targets, a)
		}
	}
	if len(targets) == 0 {
		msg := "kill: usage: kill [-s sigspec | -signum] pid | -pgid"
		Stderr(out, msg)
		return Exit(cmd, 2, msg)
	}
	status := 0
	var msgs []string
	for _, t := range targets {
		pid, err := strconv.Atoi(strings.TrimPrefix(t, "-"))
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("sh: kill: %s: arguments must be process or job IDs", t))
			status = 1
			continue
		}
		if !d.ownsPID(pid) {
			msgs = append(msgs, fmt.Sprintf("sh: kill: (%s) - No such process", t))
			status = 1
			continue
		}
		if sig == "0" {
			continue
		}
		d.stop(sig)
	}
	msg := strings.Join(msgs, "\n")
	if msg != "" {
		Stderr(out, msg)
	}
	return Exit(cmd, status, msg)
}

// ownsPID reports whether pid is a live process of the running server.
func (d *Deployment) ownsPID(pid int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	if s == nil || !s.running || pid <= 0 {
		return false
	}
	if pid == s.pid || pid == s.enginePID {
		return true
	}
	for _, w := range s.workerPIDs {
		if pid == w {
			return true
		}
	}
	return false
}

// docker handles docker stop/kill/rm -f NAME and docker ps.
func (d *Deployment) docker(cmd string, args []string, out func(remote.Line)) error {
	if len(args) == 0 {
		return Exit(cmd, 1, "docker: no command")
	}
	switch args[0] {
	case "stop", "kill", "rm":
		force := false
		for _, a := range args[1:] {
			force = force || a == "-f" || a == "--force"
		}
		d.mu.Lock()
		s := d.server
		name := ""
		running := s != nil && s.running
		if s != nil {
			name = s.container
		}
		d.mu.Unlock()
		for _, n := range args[1:] {
			if strings.HasPrefix(n, "-") {
				continue
			}
			if !running || (name != "" && n != name) {
				msg := "Error response from daemon: No such container: " + n
				Stderr(out, msg)
				return Exit(cmd, 1, msg)
			}
			if args[0] == "rm" && !force {
				msg := "Error response from daemon: cannot remove container \"/" + n + "\": container is running: stop the container before removing or force remove"
				Stderr(out, msg)
				return Exit(cmd, 1, msg)
			}
			sig := "TERM"
			if args[0] == "kill" || args[0] == "rm" {
				sig = "KILL"
			}
			d.stop(sig)
			Stdout(out, n)
		}
		return nil
	case "ps":
		Stdout(out, "CONTAINER ID   IMAGE                     COMMAND                  STATUS         NAMES")
		d.mu.Lock()
		s := d.server
		if s != nil && s.running {
			name := s.container
			if name == "" {
				name = "vllm"
			}
			Stdout(out, fmt.Sprintf("5f3c2a9e1b7d   vllm/vllm-openai:v%s   \"vllm serve %s\"   Up %d seconds   %s",
				s.version, d.opt.Model, int(time.Since(s.start).Seconds()), name))
		}
		d.mu.Unlock()
		return nil
	}
	msg := fmt.Sprintf("docker: '%s' is not a docker command (simulated host)", args[0])
	Stderr(out, msg)
	return Exit(cmd, 127, msg)
}

// dateCmd is date(1) with the few formats scripts use.
func dateCmd(t time.Time, args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "+") {
			return strftime(t, a[1:])
		}
	}
	return t.Format("Mon Jan _2 15:04:05 MST 2006")
}

func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'Y':
			b.WriteString(t.Format("2006"))
		case 'm':
			b.WriteString(t.Format("01"))
		case 'd':
			b.WriteString(t.Format("02"))
		case 'H':
			b.WriteString(t.Format("15"))
		case 'M':
			b.WriteString(t.Format("04"))
		case 'S':
			b.WriteString(t.Format("05"))
		case 'N':
			b.WriteString(fmt.Sprintf("%09d", t.Nanosecond()))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

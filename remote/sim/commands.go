package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

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
			b, err := d.readFile(p)
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
		if grepHasFiles(args[1:]) {
			return d.grepFiles(cmd, args[1:], out)
		}
		return grep(cmd, args[1:], stdin, out)
	case "ps":
		return d.ps(args[1:], out)
	case "getconf":
		Stdout(out, "100")
		return nil
	case "py-spy":
		if d.opt.NoPySpy {
			return fail(127, "sh: py-spy: command not found")
		}
		return d.pySpy(cmd, args[1:], out)
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
			if p, ok := d.lookPath(a[0]); ok {
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

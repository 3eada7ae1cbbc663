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

// The handlers of the shell's own commands, as commandTable names them.

func runTrue(context.Context, *Deployment, call) error { return nil }

func runSh(ctx context.Context, d *Deployment, c call) error {
	if len(c.args) >= 3 && (c.args[1] == "-c" || c.args[1] == "-lc") {
		return d.dispatch(ctx, c.args[2], c.stdin, c.out)
	}
	return c.fail(2, c.args[0]+": only "+c.args[0]+" -c COMMAND is simulated")
}

func runEnv(ctx context.Context, d *Deployment, c call) error {
	rest := c.args[1:]
	for len(rest) > 0 && (reAssign.MatchString(rest[0]) || rest[0] == "-i") {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil
	}
	return d.dispatch(ctx, remote.QuoteArgs(rest...), c.stdin, c.out)
}

func runTimeout(ctx context.Context, d *Deployment, c call) error {
	rest := c.args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		rest = rest[1:]
	}
	if len(rest) < 2 {
		return c.fail(125, "timeout: missing operand")
	}
	dur, err := time.ParseDuration(rest[0])
	if err != nil {
		secs, perr := strconv.ParseFloat(rest[0], 64)
		if perr != nil {
			return c.fail(125, fmt.Sprintf("timeout: invalid time interval '%s'", rest[0]))
		}
		dur = time.Duration(secs * float64(time.Second))
	}
	tctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	err = d.dispatch(tctx, remote.QuoteArgs(rest[1:]...), c.stdin, c.out)
	if tctx.Err() != nil && ctx.Err() == nil {
		return Exit(c.cmd, 124, "")
	}
	return err
}

func runCd(_ context.Context, d *Deployment, c call) error {
	if len(c.args) > 1 && !d.fs.exists(c.args[1]) {
		return c.fail(2, fmt.Sprintf("sh: cd: can't cd to %s", c.args[1]))
	}
	return nil
}

func runEcho(_ context.Context, d *Deployment, c call) error {
	a := c.args[1:]
	nl := true
	if len(a) > 0 && a[0] == "-n" {
		a, nl = a[1:], false
	}
	s := strings.Join(a, " ")
	if s == "$!" {
		s = strconv.Itoa(d.ServerPID())
	}
	if nl || s != "" {
		Stdout(c.out, s)
	}
	return nil
}

func runPkill(_ context.Context, d *Deployment, c call) error {
	if strings.Contains(c.cmd, "vllm") && d.stop(signalOf(c.args[1:])) {
		return nil
	}
	return Exit(c.cmd, 1, "")
}

func runCat(_ context.Context, d *Deployment, c call) error {
	if len(c.args) == 1 {
		return copyLines(c.stdin, c.out)
	}
	for _, p := range c.args[1:] {
		b, err := d.readFile(p)
		if err != nil {
			return c.fail(1, fmt.Sprintf("cat: %s: No such file or directory", p))
		}
		Stdout(c.out, string(b))
	}
	return nil
}

func runTee(_ context.Context, d *Deployment, c call) error {
	var buf bytes.Buffer
	if c.stdin != nil {
		_, _ = io.Copy(&buf, c.stdin)
	}
	for _, p := range c.args[1:] {
		if !strings.HasPrefix(p, "-") {
			if err := d.fs.write(p, buf.Bytes(), 0o644); err != nil {
				return c.fail(1, fmt.Sprintf("tee: %s: %v", p, err))
			}
		}
	}
	if buf.Len() > 0 {
		Stdout(c.out, buf.String())
	}
	return nil
}

func runHeadTail(_ context.Context, d *Deployment, c call) error {
	return d.headTail(c.cmd, c.args, c.stdin, c.out)
}

func runGrep(_ context.Context, d *Deployment, c call) error {
	if grepHasFiles(c.args[1:]) {
		return d.grepFiles(c.cmd, c.args[1:], c.out)
	}
	return grep(c.cmd, c.args[1:], c.stdin, c.out)
}

func runPySpy(_ context.Context, d *Deployment, c call) error {
	if d.opt.NoPySpy {
		return c.fail(127, "sh: py-spy: command not found")
	}
	return d.pySpy(c.cmd, c.args[1:], c.out)
}

func runWc(_ context.Context, _ *Deployment, c call) error {
	var buf bytes.Buffer
	if c.stdin != nil {
		_, _ = io.Copy(&buf, c.stdin)
	}
	Stdout(c.out, strconv.Itoa(bytes.Count(buf.Bytes(), []byte("\n"))))
	return nil
}

func runTest(_ context.Context, d *Deployment, c call) error {
	a := c.args[1:]
	if c.args[0] == "[" && len(a) > 0 && a[len(a)-1] == "]" {
		a = a[:len(a)-1]
	}
	if len(a) == 2 && (a[0] == "-e" || a[0] == "-f" || a[0] == "-d" || a[0] == "-r" || a[0] == "-s") {
		if d.fs.exists(a[1]) {
			return nil
		}
		return Exit(c.cmd, 1, "")
	}
	return c.fail(2, "sh: test: only -e/-f/-d/-r/-s FILE are simulated")
}

func runMkdir(_ context.Context, d *Deployment, c call) error {
	for _, p := range c.args[1:] {
		if !strings.HasPrefix(p, "-") {
			d.fs.mkdirAll(p)
		}
	}
	return nil
}

func runRm(_ context.Context, d *Deployment, c call) error {
	for _, p := range c.args[1:] {
		if !strings.HasPrefix(p, "-") && !d.fs.remove(p) && !strings.Contains(strings.Join(c.args, " "), "-f") {
			return c.fail(1, fmt.Sprintf("rm: cannot remove '%s': No such file or directory", p))
		}
	}
	return nil
}

func runLs(_ context.Context, d *Deployment, c call) error {
	dirs := []string{}
	for _, p := range c.args[1:] {
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
			return c.fail(2, fmt.Sprintf("ls: cannot access '%s': No such file or directory", p))
		}
		if len(names) > 0 {
			Stdout(c.out, strings.Join(names, "\n"))
		}
	}
	return nil
}

func runUname(_ context.Context, _ *Deployment, c call) error {
	if len(c.args) > 1 && c.args[1] == "-a" {
		Stdout(c.out, "Linux gpu-sim 6.8.0-sim #1 SMP PREEMPT_DYNAMIC SIMULATED x86_64 x86_64 x86_64 GNU/Linux")
	} else {
		Stdout(c.out, "Linux")
	}
	return nil
}

func runSleep(ctx context.Context, _ *Deployment, c call) error {
	if len(c.args) < 2 {
		return c.fail(1, "sleep: missing operand")
	}
	sec, err := strconv.ParseFloat(c.args[1], 64)
	if err != nil {
		return c.fail(1, fmt.Sprintf("sleep: invalid time interval '%s'", c.args[1]))
	}
	t := time.NewTimer(time.Duration(sec * float64(time.Second)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func runWhich(_ context.Context, d *Deployment, c call) error {
	a := c.args[1:]
	if len(a) > 0 && a[0] == "-v" {
		a = a[1:]
	}
	if len(a) == 1 {
		if p, ok := d.lookPath(a[0]); ok {
			Stdout(c.out, p)
			return nil
		}
	}
	return Exit(c.cmd, 1, "")
}

var knownBinaries = map[string]string{
	"nvidia-smi": "/usr/bin/nvidia-smi", "sh": "/bin/sh", "cat": "/bin/cat", "tail": "/usr/bin/tail",
	"kill": "/bin/kill", "docker": "/usr/bin/docker", "python3": "/usr/bin/python3",
	"vllm": "/usr/local/bin/vllm", "torchrun": "/usr/local/bin/torchrun",
}

package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// A command is one row of the simulated shell's command table: the name it
// is called by, how it runs, and one line of help (the shell's `help`
// prints them). A row with a line matcher is found by its whole command
// line instead (the benchmark scripts, the probes, find -printf): those rows
// are tried first, in table order, before the line is split into words.
type command struct {
	name string
	line func(cmd string) bool
	run  handler
	help string
}

// A handler runs one command. It writes its output with c.out (Stdout,
// Stderr) and returns nil, a *remote.ExitError, or the context's error.
type handler func(ctx context.Context, d *Deployment, c call) error

// call is one command being run: its whole line, its words without
// redirections, assignments and wrappers (nil for a row found by its line),
// its stdin and where its output goes.
type call struct {
	cmd   string
	args  []string
	stdin io.Reader
	out   func(remote.Line)
}

// fail writes msg to stderr and exits with status.
func (c call) fail(status int, msg string) error {
	Stderr(c.out, msg)
	return Exit(c.cmd, status, msg)
}

// commandTable is every command the simulated host answers. Start gives
// each deployment this table (d.commands).
func commandTable() []command {
	return []command{
		// Found by their whole line.
		{name: "python-doctor", line: isDoctorProbe, run: runDoctorProbe, help: "profdeck doctor's python probe: versions, CUDA, devices"},
		{name: "df", line: func(cmd string) bool { return strings.HasPrefix(cmd, "df ") }, run: runDF, help: "free space of the profiler directory's disk"},
		{name: "micro-script", line: isMicroScript, run: runMicroScript, help: "the micro GEMM script: timings from the H200 model"},
		{name: "nccl-script", line: isNCCLScript, run: runNCCLScript, help: "the NCCL script under torchrun: timings from the H200 model"},
		{name: "bench-kill", line: isBenchKill, run: func(context.Context, *Deployment, call) error { return nil }, help: "the signal that stops a cancelled script in a container"},
		{name: "find-printf", line: isFindPrintf, run: runFind, help: "find DIR -type f -printf '%T@ %s %p\\n': the profiler directory's files"},
		{name: "python-sysinfo", line: isSysinfoProbe, run: runSysinfo, help: "the system probe: torch, vLLM and the model's config"},

		// Called by name.
		{name: "pid-probe", line: isPidProbe, run: runPidProbe, help: "the load engine's probe of a pid: start time, owner, launch mark"},
		{name: "true", run: runTrue, help: "exit 0"},
		{name: ":", run: runTrue, help: "exit 0"},
		{name: "false", run: func(_ context.Context, _ *Deployment, c call) error { return Exit(c.cmd, 1, "") }, help: "exit 1"},
		{name: "sh", run: runSh, help: "sh -c COMMAND"},
		{name: "bash", run: runSh, help: "bash -c COMMAND"},
		{name: "env", run: runEnv, help: "env [-i] [VAR=value …] COMMAND"},
		{name: "timeout", run: runTimeout, help: "timeout DURATION COMMAND (exit 124 when it runs out)"},
		{name: "cd", run: runCd, help: "cd DIR (fails when DIR is missing)"},
		{name: "echo", run: runEcho, help: "echo [-n] WORDS ($! is the server's pid)"},
		{name: "nvidia-smi", run: func(ctx context.Context, d *Deployment, c call) error {
			return d.nvidiaSMI(ctx, c.cmd, c.args[1:], c.out)
		}, help: "the GPUs: --query-gpu, --query-compute-apps, -L, -q, -l/-lms loops, dmon, nvlink"},
		{name: "kill", run: func(_ context.Context, d *Deployment, c call) error { return d.kill(c.cmd, c.args[1:], c.out) }, help: "kill [-SIGNAL] PID (the server's processes)"},
		{name: "pkill", run: runPkill, help: "pkill [-SIGNAL] -f vllm"},
		{name: "docker", run: func(_ context.Context, d *Deployment, c call) error { return d.docker(c.cmd, c.args[1:], c.out) }, help: "docker stop|kill|rm|top|ps on the server's container"},
		{name: "cat", run: runCat, help: "cat [FILE …]"},
		{name: "tee", run: runTee, help: "tee FILE …"},
		{name: "head", run: runHeadTail, help: "head -n N|-c N [FILE]"},
		{name: "tail", run: runHeadTail, help: "tail -n N|-c [+]N [FILE]"},
		{name: "grep", run: runGrep, help: "grep [-E -F -i -v -c] PATTERN [FILE …]"},
		{name: "ps", run: func(_ context.Context, d *Deployment, c call) error { return d.ps(c.args[1:], c.out) }, help: "ps of the server's processes"},
		{name: "getconf", run: func(_ context.Context, _ *Deployment, c call) error { Stdout(c.out, "100"); return nil }, help: "getconf CLK_TCK (100)"},
		{name: "py-spy", run: runPySpy, help: "py-spy dump --pid PID (absent with Options.NoPySpy)"},
		{name: "wc", run: runWc, help: "wc -l of stdin"},
		{name: "test", run: runTest, help: "test -e|-f|-d|-r|-s FILE"},
		{name: "[", run: runTest, help: "[ -e|-f|-d|-r|-s FILE ]"},
		{name: "mkdir", run: runMkdir, help: "mkdir [-p] DIR …"},
		{name: "rm", run: runRm, help: "rm [-f] PATH …"},
		{name: "ls", run: runLs, help: "ls [DIR …]"},
		{name: "date", run: func(_ context.Context, _ *Deployment, c call) error {
			Stdout(c.out, dateCmd(time.Now().UTC(), c.args[1:]))
			return nil
		}, help: "date [+%s|+FORMAT]"},
		{name: "uname", run: runUname, help: "uname [-a]"},
		{name: "hostname", run: say("gpu-sim"), help: "gpu-sim"},
		{name: "whoami", run: say("root"), help: "root"},
		{name: "pwd", run: say("/root"), help: "/root"},
		{name: "nproc", run: say("192"), help: "192"},
		{name: "sleep", run: runSleep, help: "sleep SECONDS"},
		{name: "which", run: runWhich, help: "which NAME"},
		{name: "command", run: runWhich, help: "command -v NAME"},
		{name: "help", run: runHelp, help: "this list"},
	}
}

// byLine is the first row with a line matcher that matches cmd.
func (d *Deployment) byLine(cmd string) (command, bool) {
	for _, c := range d.commands {
		if c.line != nil && c.line(cmd) {
			return c, true
		}
	}
	return command{}, false
}

// exec runs the command args[0] of line cmd by its name.
func (d *Deployment) exec(ctx context.Context, cmd string, args []string, stdin io.Reader, out func(remote.Line)) error {
	c := call{cmd: cmd, args: args, stdin: stdin, out: out}
	for _, row := range d.commands {
		if row.line == nil && row.name == args[0] {
			return row.run(ctx, d, c)
		}
	}
	return c.fail(127, fmt.Sprintf("sh: %s: command not found (simulated host)", args[0]))
}

// runHelp lists the table: each command and its help.
func runHelp(_ context.Context, d *Deployment, c call) error {
	for _, row := range d.commands {
		Stdout(c.out, fmt.Sprintf("%-16s %s", row.name, row.help))
	}
	return nil
}

// say is a command that prints text.
func say(text string) handler {
	return func(_ context.Context, _ *Deployment, c call) error {
		Stdout(c.out, text)
		return nil
	}
}

// Stdout sends each line of text (split on newlines) as stdout.
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

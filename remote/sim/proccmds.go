package sim

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote"
)

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
	case "top":
		return d.dockerTop(cmd, args[1:], out)
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

// rePidProbe is the load engine's probe of a pid (pd_pid=N; …) and the
// mark it looks for.
var rePidProbe = regexp.MustCompile(`^pd_pid=([0-9]+); .*grep -qx '?PROFDECK_LAUNCH=([^' ;]*)`)

func isPidProbe(cmd string) bool { return rePidProbe.MatchString(cmd) }

// runPidProbe answers the probe as a host's /proc would for the server's
// pid: its start time (in ticks), root as owner and
// caller, whether its environment carries the mark, its command line.
func runPidProbe(_ context.Context, d *Deployment, c call) error {
	m := rePidProbe.FindStringSubmatch(c.cmd)
	pid, _ := strconv.Atoi(m[1])
	d.mu.Lock()
	s := d.server
	ok := s != nil && s.running && pid == s.pid
	var start int64
	var mark, cmdline string
	if ok {
		start = s.start.UnixNano() / 1e7 // stable for the process, as a start time is
		mark, cmdline = s.mark, s.cmdline
	}
	d.mu.Unlock()
	if !ok {
		Stdout(c.out, "gone")
		return nil
	}
	Stdout(c.out, fmt.Sprintf("start %d", start))
	Stdout(c.out, "uid 0")
	Stdout(c.out, "me 0")
	if mark != "" && mark == m[2] {
		Stdout(c.out, "marked")
	}
	Stdout(c.out, "cmd "+cmdline)
	return nil
}

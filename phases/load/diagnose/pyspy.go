package diagnose

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// PySpyHint is the one line shown when py-spy is not on the host.
const PySpyHint = "py-spy is not on the host: `pip install py-spy` there (run it as root; in Docker the container needs --cap-add SYS_PTRACE) to see where each rank's Python is stuck"

// stackTimeout bounds one py-spy dump (it pauses the process while it reads).
const stackTimeout = 20

// stacks dumps each process's Python stack with py-spy when the host has
// it, and groups processes whose stacks end in the same frames.
func (g *gatherer) stacks(ctx context.Context) {
	if len(g.d.Procs) == 0 {
		return
	}
	if _, err := remote.Output(ctx, g.cfg.Host, "command -v py-spy"); err != nil {
		hint := PySpyHint
		if g.cfg.Container != "" {
			// py-spy on the host reads a container's processes by their host
			// pids (docker top lists them): nothing is needed inside.
			hint += " (on the host, not in the container: it reads the container's processes by their host pids)"
		}
		g.d.Hints = append(g.d.Hints, hint)
		return
	}
	var dumps []dump
	n := 0
	for _, p := range g.d.Procs {
		if p.State == "gone" || p.State == "Z" || n >= maxStacks {
			continue
		}
		n++
		cmd := remote.QuoteArgs("timeout", strconv.Itoa(stackTimeout), "py-spy", "dump", "--pid", strconv.Itoa(p.PID))
		out, err := remote.Output(ctx, g.cfg.Host, cmd)
		if err != nil {
			if strings.TrimSpace(out) == "" {
				g.note("py-spy dump --pid %d: %s", p.PID, firstLine(err.Error()))
				continue
			}
		}
		if d, ok := parseDump(out); ok {
			if d.pid == 0 {
				d.pid = p.PID
			}
			dumps = append(dumps, d)
		}
	}
	g.d.Stacks = groupStacks(dumps)
	for i := range g.d.Stacks {
		st := &g.d.Stacks[i]
		for _, pid := range st.PIDs {
			if app, ok := g.gpu[pid]; ok && app.gpu >= 0 {
				st.Ranks = append(st.Ranks, app.gpu)
			}
		}
		if len(st.Ranks) != len(st.PIDs) {
			st.Ranks = nil
		}
		sort.Ints(st.Ranks)
	}
}

// dump is one process's py-spy output: the thread that tells the most.
type dump struct {
	pid    int
	frames []string // innermost first, "function (file:line)"
}

// maxDumpLines bounds what is read of one dump.
const maxDumpLines = 4000

// parseDump reads `py-spy dump` output (v0.3–0.4): "Process PID: CMD",
// "Python vX (EXE)", then per thread `Thread TID (STATE): "NAME"` and its
// frames, innermost first, as `    function (file:line)`. It keeps the main
// thread's stack, else the first active thread's, else the first thread's.
func parseDump(out string) (dump, bool) {
	type thread struct {
		name, state string
		frames      []string
	}
	var d dump
	var threads []thread
	for i, line := range strings.Split(out, "\n") {
		if i >= maxDumpLines {
			break
		}
		t := strings.TrimRight(line, "\r ")
		switch {
		case strings.HasPrefix(t, "Process "):
			pidS, _, _ := strings.Cut(strings.TrimPrefix(t, "Process "), ":")
			d.pid, _ = strconv.Atoi(strings.TrimSpace(pidS))
		case strings.HasPrefix(t, "Thread "):
			th := thread{}
			if o, c := strings.IndexByte(t, '('), strings.IndexByte(t, ')'); o >= 0 && c > o {
				th.state = t[o+1 : c]
			}
			if q := strings.IndexByte(t, '"'); q >= 0 {
				th.name = strings.Trim(t[q:], `"`)
			}
			threads = append(threads, th)
		case strings.HasPrefix(t, "    ") && len(threads) > 0:
			f := strings.TrimSpace(t)
			if f == "" || strings.HasPrefix(f, "Arguments:") || strings.HasPrefix(f, "Locals:") || !strings.Contains(f, "(") {
				continue
			}
			th := &threads[len(threads)-1]
			if len(th.frames) < 64 {
				th.frames = append(th.frames, f)
			}
		}
	}
	if len(threads) == 0 {
		return d, false
	}
	pick := -1
	for i, th := range threads {
		if th.name == "MainThread" && len(th.frames) > 0 {
			pick = i
			break
		}
	}
	for i, th := range threads {
		if pick < 0 && strings.HasPrefix(th.state, "active") && len(th.frames) > 0 {
			pick = i
		}
	}
	if pick < 0 {
		pick = 0
	}
	d.frames = threads[pick].frames
	return d, len(d.frames) > 0
}

// where is a frame without its line number: "torch/cuda/graphs.py: capture_end".
func where(frame string) string {
	fn, loc, ok := strings.Cut(frame, " (")
	if !ok {
		return frame
	}
	loc = strings.TrimSuffix(loc, ")")
	if i := strings.LastIndexByte(loc, ':'); i > 0 {
		loc = loc[:i]
	}
	return loc + ": " + strings.TrimSpace(fn)
}

// groupStacks groups processes whose two innermost frames are the same
// (lines aside), largest group first.
func groupStacks(dumps []dump) []phases.StackGroup {
	byKey := map[string]*phases.StackGroup{}
	var order []string
	for _, d := range dumps {
		var keys []string
		for i := 0; i < len(d.frames) && i < 2; i++ {
			keys = append(keys, where(d.frames[i]))
		}
		key := strings.Join(keys, " ← ")
		g := byKey[key]
		if g == nil {
			frames := d.frames
			if len(frames) > 6 {
				frames = frames[:6]
			}
			g = &phases.StackGroup{Where: where(d.frames[0]), Frames: append([]string(nil), frames...)}
			byKey[key] = g
			order = append(order, key)
		}
		g.PIDs = append(g.PIDs, d.pid)
	}
	out := make([]phases.StackGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].PIDs) > len(out[j].PIDs) })
	return out
}

// StackText says where a group is: "8 ranks in torch/cuda/graphs.py:
// capture_end" when the processes hold GPUs, else "3 processes in …".
func StackText(g phases.StackGroup) string {
	n := len(g.PIDs)
	if len(g.Ranks) == n && n > 1 {
		return fmt.Sprintf("%d ranks in %s", n, g.Where)
	}
	if len(g.Ranks) == 1 && n == 1 {
		return fmt.Sprintf("rank %d in %s", g.Ranks[0], g.Where)
	}
	if n == 1 {
		return fmt.Sprintf("pid %d in %s", g.PIDs[0], g.Where)
	}
	return fmt.Sprintf("%d processes in %s", n, g.Where)
}

package diagnose

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// gpuApp is a process nvidia-smi lists on a GPU.
type gpuApp struct {
	gpu    int
	memMiB float64
}

// gpus reads each GPU's utilisation and memory, and which process holds
// which GPU.
func (g *gatherer) gpus(ctx context.Context) error {
	g.gpu = map[int]gpuApp{}
	out, err := remote.Output(ctx, g.cfg.Host, "nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits")
	if err != nil {
		g.note("nvidia-smi: %s (GPU utilisation unknown)", firstLine(err.Error()))
		return err
	}
	byUUID := map[string]int{}
	for _, line := range lines(out) {
		f := csvFields(line)
		if len(f) < 4 {
			continue
		}
		idx, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		util, uerr := strconv.ParseFloat(f[2], 64)
		mem, _ := strconv.ParseFloat(f[3], 64)
		if uerr != nil {
			util = -1 // [N/A]
		}
		byUUID[f[1]] = idx
		g.d.GPUs = append(g.d.GPUs, phases.GPUEvidence{Index: idx, UtilPct: util, MemMiB: mem})
	}
	out, err = remote.Output(ctx, g.cfg.Host, "nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits")
	if err != nil {
		g.note("nvidia-smi compute processes: %s", firstLine(err.Error()))
		return nil
	}
	for _, line := range lines(out) {
		f := csvFields(line)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		idx, ok := byUUID[f[1]]
		if !ok {
			idx = -1
		}
		mem, _ := strconv.ParseFloat(f[2], 64)
		g.gpu[pid] = gpuApp{gpu: idx, memMiB: mem}
	}
	return nil
}

// listGroup returns the pids of the processes in process group pgid.
func listGroup(ctx context.Context, h remote.Host, pgid int) ([]int, error) {
	out, err := remote.Output(ctx, h, "ps -eo pid=,pgid=")
	if err != nil {
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	var pids []int
	for _, line := range lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		pid, e1 := strconv.Atoi(f[0])
		pg, e2 := strconv.Atoi(f[1])
		if e1 == nil && e2 == nil && pg == pgid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// dockerTop returns the host pids of a container's processes (docker top
// prints them with a header naming the PID column).
func dockerTop(ctx context.Context, h remote.Host, name string) ([]int, error) {
	out, err := remote.Output(ctx, h, "docker top "+remote.Quote(name))
	if err != nil {
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	ls := lines(out)
	if len(ls) == 0 {
		return nil, nil
	}
	col := -1
	for i, h := range strings.Fields(ls[0]) {
		if h == "PID" {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("no PID column in %q", ls[0])
	}
	var pids []int
	for _, line := range ls[1:] {
		f := strings.Fields(line)
		if col < len(f) {
			if pid, err := strconv.Atoi(f[col]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// procSample is one reading of a process's /proc files.
type procSample struct {
	name      string
	state     string
	ticks     float64 // utime + stime
	readBytes int64   // storage reads
	rchar     int64   // bytes through read calls
	ioKnown   bool
}

// snapshot is one reading of every sampled process, with the host's uptime.
type snapshot struct {
	uptime float64
	procs  map[int]procSample
}

// readProcs reads /proc/uptime and each process's stat and io in one
// command: grep -H prefixes every line with its file, so a process that is
// gone (or an io file not readable) simply has no lines.
func readProcs(ctx context.Context, h remote.Host, pids []int) (snapshot, error) {
	args := []string{"grep", "-H", "", "/proc/uptime"}
	for _, p := range pids {
		args = append(args, fmt.Sprintf("/proc/%d/stat", p), fmt.Sprintf("/proc/%d/io", p))
	}
	out, err := remote.Output(ctx, h, remote.QuoteArgs(args...)+" 2>/dev/null")
	if err != nil && strings.TrimSpace(out) == "" {
		var ee *remote.ExitError
		if !asExit(err, &ee) {
			return snapshot{}, err
		}
	}
	return parseProcs(out), nil
}

// parseProcs reads grep -H's "FILE:LINE" output of /proc files.
func parseProcs(out string) snapshot {
	s := snapshot{procs: map[int]procSample{}}
	for _, line := range lines(out) {
		file, text, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if file == "/proc/uptime" {
			if f := strings.Fields(text); len(f) > 0 {
				s.uptime, _ = strconv.ParseFloat(f[0], 64)
			}
			continue
		}
		rest, ok := strings.CutPrefix(file, "/proc/")
		if !ok {
			continue
		}
		pidS, kind, ok := strings.Cut(rest, "/")
		pid, err := strconv.Atoi(pidS)
		if !ok || err != nil {
			continue
		}
		p := s.procs[pid]
		switch kind {
		case "stat":
			p.name, p.state, p.ticks = parseStat(text)
		case "io":
			k, v, _ := strings.Cut(text, ":")
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "read_bytes":
				p.readBytes, p.ioKnown = n, true
			case "rchar":
				p.rchar, p.ioKnown = n, true
			}
		}
		s.procs[pid] = p
	}
	return s
}

// parseStat reads the name, state and CPU ticks from /proc/PID/stat. The
// name is in parentheses and may hold spaces and parentheses itself.
func parseStat(text string) (name, state string, ticks float64) {
	open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || end < open {
		return "", "", 0
	}
	name = text[open+1 : end]
	f := strings.Fields(text[end+1:])
	if len(f) < 13 {
		return name, "", 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return name, f[0], u + s
}

// sample reads every process twice, Window apart, and fills Procs.
func (g *gatherer) sample(ctx context.Context) error {
	if len(g.pids) == 0 {
		g.note("no server process found (no pid known, none in the launch's process group, the container or on the GPUs)")
		return nil
	}
	hz := clockTicks(ctx, g.cfg.Host, g)
	first, err := readProcs(ctx, g.cfg.Host, g.pids)
	if err != nil {
		return fmt.Errorf("reading /proc on %s: %w", g.cfg.Host.Name(), err)
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(g.cfg.Window):
	}
	second, err := readProcs(ctx, g.cfg.Host, g.pids)
	if err != nil {
		return fmt.Errorf("reading /proc on %s: %w", g.cfg.Host.Name(), err)
	}
	dt := second.uptime - first.uptime
	if dt <= 0 {
		dt = time.Since(start).Seconds()
		g.note("the host's uptime did not advance: rates use this machine's clock")
	}
	g.d.SampleS = round2(dt)
	for _, pid := range g.pids {
		a, aok := first.procs[pid]
		b, bok := second.procs[pid]
		pe := phases.ProcEvidence{PID: pid, GPU: -1}
		if app, ok := g.gpu[pid]; ok {
			pe.GPU, pe.GPUMemMiB = app.gpu, app.memMiB
		}
		if !aok || !bok || b.state == "" {
			pe.State = "gone"
			g.d.Procs = append(g.d.Procs, pe)
			continue
		}
		pe.Name, pe.State = b.name, b.state
		pe.CPUPct = round1(100 * (b.ticks - a.ticks) / hz / dt)
		pe.IOKnown = a.ioKnown && b.ioKnown
		if pe.IOKnown {
			// Storage reads when there are any; read calls (rchar)
			// otherwise, so a file read from the page cache still counts,
			// but not the trickle of sockets and pipes.
			delta := b.readBytes - a.readBytes
			if delta <= 0 {
				delta = b.rchar - a.rchar
				if float64(delta)/dt < readingBps {
					delta = 0
				}
			}
			pe.ReadBps = round1(float64(max(delta, 0)) / dt)
			pe.ReadTotal = max(b.readBytes, b.rchar)
		}
		g.d.Procs = append(g.d.Procs, pe)
	}
	return nil
}

// clockTicks is the host's USER_HZ (getconf CLK_TCK), 100 when unknown.
func clockTicks(ctx context.Context, h remote.Host, g *gatherer) float64 {
	out, err := remote.Output(ctx, h, "getconf CLK_TCK")
	if err == nil {
		if v, perr := strconv.ParseFloat(strings.TrimSpace(out), 64); perr == nil && v > 0 {
			return v
		}
	}
	g.note("getconf CLK_TCK failed: CPU %% assumes 100 ticks per second")
	return 100
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, "\r "); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func csvFields(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

func asExit(err error, target **remote.ExitError) bool { return errors.As(err, target) }

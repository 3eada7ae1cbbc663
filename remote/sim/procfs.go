package sim

import (
	"fmt"

	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// The simulated host's process view: /proc/uptime and /proc/PID/{stat,io}
// for the server's processes, ps, docker top, getconf and py-spy dump, so
// a stall can be diagnosed as on a real host. Each process's CPU time and
// bytes read grow with what the server is doing: workers read weights fast
// while loading, burn CPU while compiling, and do nothing once stalled.

// procTable holds the simulated processes' counters.
type procTable struct {
	mu     sync.Mutex
	boot   time.Time
	lastAt time.Time
	byPID  map[int]*procCount
}

type procCount struct {
	ticks, readBytes, rchar float64
}

// role is what a server pid is: the API server, the engine core, or worker
// rank n (its GPU).
func (d *Deployment) role(pid int) (s *serverProc, role string, rank int) {
	s = d.server
	if s == nil || !s.running {
		return nil, "", -1
	}
	switch pid {
	case s.pid:
		return s, "api", -1
	case s.enginePID:
		return s, "engine", -1
	}
	for i, w := range s.workerPIDs {
		if w == pid {
			return s, "worker", i
		}
	}
	return nil, "", -1
}

// procActivity is a process's state, CPU % and read rate now.
func procActivity(s *serverProc, role string) (state string, cpuPct, readBps float64) {
	if role != "worker" {
		return "S", 1.5, 0
	}
	switch {
	case s.stalled:
		return "S", 0.3, 0
	case s.stage == phases.StageStarting:
		return "R", 35, 0
	case s.stage == phases.StageWeights:
		return "R", 60, 1.4e9
	case s.stage == phases.StageCompile:
		return "R", 98, 0
	case s.stage == phases.StageKVCache || s.stage == phases.StageCUDAGraphs:
		return "R", 40, 0
	}
	return "S", 4, 0
}

// advanceProcsLocked grows every live process's counters to now.
func (d *Deployment) advanceProcsLocked(now time.Time) {
	t := &d.procs
	if t.byPID == nil {
		t.byPID = map[int]*procCount{}
		t.boot = now.Add(-72 * time.Hour)
		t.lastAt = now
	}
	dt := now.Sub(t.lastAt).Seconds()
	t.lastAt = now
	s := d.server
	if s == nil || !s.running || dt <= 0 {
		return
	}
	for _, pid := range serverPIDs(s) {
		_, role, rank := d.role(pid)
		_, cpu, read := procActivity(s, role)
		c := t.byPID[pid]
		if c == nil {
			// First seen: a worker has read the weights it holds so far.
			c = &procCount{ticks: 120, rchar: 4e6}
			if rank >= 0 && rank < len(d.gpus) {
				c.readBytes = d.gpus[rank].usedGiB * (1 << 30)
				c.rchar += c.readBytes
				c.ticks += 60 * now.Sub(s.start).Seconds()
			}
			t.byPID[pid] = c
		}
		c.ticks += cpu * dt // 100 ticks a second: 1 % is 1 tick a second
		c.readBytes += read * dt
		c.rchar += read*dt + 2e3*dt
	}
}

func serverPIDs(s *serverProc) []int {
	return append([]int{s.pid, s.enginePID}, s.workerPIDs...)
}

// procFile returns a /proc file's content, ok false when it does not exist.
func (d *Deployment) procFile(p string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	d.procs.mu.Lock()
	defer d.procs.mu.Unlock()
	d.advanceProcsLocked(now)
	if p == "/proc/uptime" {
		up := now.Sub(d.procs.boot).Seconds()
		return fmt.Sprintf("%.2f %.2f", up, up*180), true
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	pidS, file, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidS)
	s, role, rank := d.role(pid)
	if err != nil || s == nil {
		return "", false
	}
	c := d.procs.byPID[pid]
	if c == nil {
		c = &procCount{}
	}
	state, _, _ := procActivity(s, role)
	switch file {
	case "stat":
		name := map[string]string{"api": "vllm", "engine": "VLLM::EngineCor"}[role]
		if role == "worker" {
			name = fmt.Sprintf("VLLM::Worker_TP%d", rank)
			name = name[:min(len(name), 15)]
		}
		u := int64(c.ticks * 0.9)
		return fmt.Sprintf("%d (%s) %s %d %d %d 0 -1 4194560 91234 0 12 0 %d %d 0 0 20 0 %d 0 %d 98765432100 2345678 18446744073709551615 0 0 0 0 0 16781824 16386 0 0 0 17 %d 0 0 0 0 0",
			pid, name, state, s.pid, s.pid, s.pid, u, int64(c.ticks)-u, 40, int64(c.ticks), max(rank, 0)), true
	case "io":
		return fmt.Sprintf("rchar: %d\nwchar: 81920\nsyscr: %d\nsyscw: 40\nread_bytes: %d\nwrite_bytes: 4096\ncancelled_write_bytes: 0",
			int64(c.rchar), int64(c.rchar/65536)+100, int64(c.readBytes)), true
	}
	return "", false
}

// readFile reads a file of the simulated host, /proc included.
func (d *Deployment) readFile(p string) ([]byte, error) {
	if strings.HasPrefix(p, "/proc/") {
		if s, ok := d.procFile(p); ok {
			return []byte(s + "\n"), nil
		}
		return nil, fmt.Errorf("%s: No such file or directory", p)
	}
	return d.fs.read(p)
}

// grepFiles is grep over files: -H (or several files) prefixes each line
// with its file, a fixed-string pattern ("" matches every line).
func (d *Deployment) grepFiles(cmd string, args []string, out func(remote.Line)) error {
	withName, pat, havePat := false, "", false
	var files []string
	for _, a := range args {
		switch {
		case !havePat && strings.HasPrefix(a, "-") && len(a) > 1:
			withName = withName || strings.Contains(a, "H")
		case !havePat:
			pat, havePat = a, true
		default:
			files = append(files, a)
		}
	}
	withName = withName || len(files) > 1
	status, matched := 0, false
	for _, f := range files {
		b, err := d.readFile(f)
		if err != nil {
			Stderr(out, "grep: "+f+": No such file or directory")
			status = 2
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if !strings.Contains(line, pat) {
				continue
			}
			matched = true
			if withName {
				line = f + ":" + line
			}
			Stdout(out, line)
		}
	}
	if status == 0 && !matched {
		status = 1
	}
	if status != 0 {
		return Exit(cmd, status, "")
	}
	return nil
}

// ps prints -eo FIELDS for the host's processes: init, sshd and the server's.
func (d *Deployment) ps(args []string, out func(remote.Line)) error {
	spec := "pid,tty,time,cmd"
	for i, a := range args {
		if (a == "-o" || a == "-eo") && i+1 < len(args) {
			spec = args[i+1]
		}
	}
	type row struct {
		pid, pgid        int
		stat, comm, user string
	}
	rows := []row{{1, 1, "Ss", "systemd", "root"}, {812, 812, "Ss", "sshd", "root"}}
	for _, o := range d.opt.Others {
		rows = append(rows, row{o.PID, o.PID, "Sl", o.Command, o.User})
	}
	d.mu.Lock()
	if s := d.server; s != nil && s.running {
		for _, pid := range serverPIDs(s) {
			_, role, rank := d.role(pid)
			state, _, _ := procActivity(s, role)
			comm := map[string]string{"api": "vllm", "engine": "VLLM::EngineCor"}[role]
			if role == "worker" {
				comm = fmt.Sprintf("VLLM::Worker_TP%d", rank)
			}
			rows = append(rows, row{pid, s.pid, state + "l", comm, "root"})
		}
	}
	d.mu.Unlock()
	fields := strings.Split(spec, ",")
	for _, r := range rows {
		var cols []string
		for _, f := range fields {
			switch strings.TrimSuffix(f, "=") {
			case "pid":
				cols = append(cols, strconv.Itoa(r.pid))
			case "pgid":
				cols = append(cols, strconv.Itoa(r.pgid))
			case "stat", "state":
				cols = append(cols, r.stat)
			case "user":
				cols = append(cols, r.user)
			default:
				cols = append(cols, r.comm)
			}
		}
		Stdout(out, strings.Join(cols, " "))
	}
	return nil
}

// dockerTop is `docker top NAME`: its processes' host pids under a header.
func (d *Deployment) dockerTop(cmd string, args []string, out func(remote.Line)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	if s == nil || !s.running || s.container == "" || name != s.container {
		msg := "Error response from daemon: No such container: " + name
		Stderr(out, msg)
		return Exit(cmd, 1, msg)
	}
	Stdout(out, "UID   PID   PPID   C   STIME   TTY   TIME       CMD")
	for _, pid := range serverPIDs(s) {
		Stdout(out, fmt.Sprintf("root  %d  %d  1  10:00  ?  00:01:02  python3 -m vllm", pid, s.pid))
	}
	return nil
}

// pySpy is `py-spy dump --pid PID` on the server's processes: the stack
// each is in, given the server's stage.
func (d *Deployment) pySpy(cmd string, args []string, out func(remote.Line)) error {
	pid := 0
	for i, a := range args {
		if a == "--pid" || a == "-p" {
			if i+1 < len(args) {
				pid, _ = strconv.Atoi(args[i+1])
			}
		}
	}
	if len(args) == 0 || args[0] != "dump" {
		return Exit(cmd, 2, "py-spy: only `py-spy dump --pid PID` is simulated")
	}
	d.mu.Lock()
	s, role, rank := d.role(pid)
	var frames []string
	state := "idle"
	if s != nil {
		frames = simStack(s, role)
		if st, _, _ := procActivity(s, role); st == "R" {
			state = "active"
		}
	}
	d.mu.Unlock()
	if s == nil {
		msg := fmt.Sprintf("Error: Failed to open process %d - No such process", pid)
		Stderr(out, msg)
		return Exit(cmd, 1, msg)
	}
	name := map[string]string{"api": "vllm serve " + d.opt.Model, "engine": "VLLM::EngineCore"}[role]
	if role == "worker" {
		name = fmt.Sprintf("VLLM::Worker_TP%d", rank)
	}
	Stdout(out, fmt.Sprintf("Process %d: %s\nPython v3.12.3 (/usr/bin/python3.12)\n", pid, name))
	Stdout(out, fmt.Sprintf("Thread %d (%s): \"MainThread\"", pid, state))
	for _, f := range frames {
		Stdout(out, "    "+f)
	}
	Stdout(out, fmt.Sprintf("Thread %d (idle): \"Thread-1 (_report_usage_worker)\"\n    wait (threading.py:359)", pid+1000))
	return nil
}

// simStack is a process's Python stack, innermost first.
func simStack(s *serverProc, role string) []string {
	switch role {
	case "api":
		return []string{"select (selectors.py:468)", "_run_once (asyncio/base_events.py:1949)", "run_forever (asyncio/base_events.py:641)"}
	case "engine":
		return []string{"poll (zmq/sugar/socket.py:1034)", "run_busy_loop (vllm/v1/engine/core.py:781)", "run_engine_core (vllm/v1/engine/core.py:723)"}
	}
	loader := []string{"load_weights (vllm/model_executor/models/deepseek_v2.py:1190)",
		"load_model (vllm/model_executor/model_loader/base_loader.py:56)", "load_model (vllm/v1/worker/gpu_model_runner.py:2040)"}
	switch {
	case s.stage == phases.StageWeights || s.stalled && s.stage == phases.StageStarting:
		return append([]string{"_read_into (safetensors/torch.py:315)", "safetensors_weights_iterator (vllm/model_executor/model_loader/weight_utils.py:702)"}, loader...)
	case s.stage == phases.StageCompile:
		return []string{"compile_fx (torch/_inductor/compile_fx.py:1733)", "__call__ (vllm/compilation/backends.py:594)", "compile_or_warm_up_model (vllm/v1/worker/gpu_worker.py:339)"}
	case s.stage == phases.StageKVCache || s.stage == phases.StageCUDAGraphs:
		return []string{"capture_end (torch/cuda/graphs.py:88)", "__exit__ (torch/cuda/graphs.py:186)", "capture_model (vllm/v1/worker/gpu_model_runner.py:2301)"}
	case s.stage == phases.StageStarting:
		return []string{"barrier (torch/distributed/distributed_c10d.py:4635)", "init_distributed_environment (vllm/distributed/parallel_state.py:1001)"}
	}
	return []string{"dequeue (vllm/distributed/device_communicators/shm_broadcast.py:508)", "worker_busy_loop (vllm/v1/executor/multiproc_executor.py:586)"}
}

// lookPath is `command -v NAME` on the simulated host.
func (d *Deployment) lookPath(name string) (string, bool) {
	if name == "py-spy" {
		return "/usr/local/bin/py-spy", !d.opt.NoPySpy
	}
	if name == "getconf" || name == "ps" || name == "grep" {
		return "/usr/bin/" + name, true
	}
	p, ok := knownBinaries[name]
	return p, ok
}

// grepHasFiles reports whether grep's arguments name files after the pattern.
func grepHasFiles(args []string) bool {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && n == 0 {
			continue
		}
		n++
	}
	return n >= 2
}

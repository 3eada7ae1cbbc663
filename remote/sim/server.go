package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// releaseTime is how long a stopped server takes to give its GPU memory back.
const releaseTime = 2 * time.Second

// serverProc is one run of the simulated vLLM server, from launch to exit.
type serverProc struct {
	pid        int // the API server's pid, also the process group id
	enginePID  int
	workerPIDs []int
	logPath    string
	container  string
	start      time.Time
	running    bool
	stage      string
	version    string
	profiler   bool
	profDir    string
	stallAt    float64
	stalled    bool
	wEnd       []float64 // per GPU, the load fraction at which its weights are in
	steps      []step
	next       int
	shards     int
	barStart   time.Time // when the current progress bar started
	lastTick   time.Time // the previous tick (nodes.go holds the clock at a collective)
	rankBase   int       // the global rank of Worker_TP0's GPU on this node
	apiKey     string    // the launch's --api-key, which vLLM logs among its non-default args
	mark       string    // PROFDECK_LAUNCH in the launch's environment
	cmdline    string    // the launch line, as /proc/PID/cmdline shows it

	statsAt   time.Time
	statsPrev metricsSnap
	statsBusy bool
}

// step is something the loading server does when the load reaches fraction at
// of Options.LoadTime. run is called with d.mu held.
type step struct {
	at  float64
	run func(d *Deployment, s *serverProc, now time.Time)
}

// Stage returns the current stage of the server ("" before the first launch).
func (d *Deployment) Stage() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.server == nil {
		return ""
	}
	return d.server.stage
}

// ServerPID returns the pid (and process group) of the running server, or 0.
func (d *Deployment) ServerPID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.server == nil || !d.server.running {
		return 0
	}
	return d.server.pid
}

// LogPath returns the path of the current server log.
func (d *Deployment) LogPath() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.server == nil {
		return d.opt.LogPath
	}
	return d.server.logPath
}

// Log appends one line to the running server's log in vLLM's format:
// proc is the process prefix name ("APIServer", "EngineCore_DP0",
// "Worker_TP0", or "" for none), level INFO/WARNING/ERROR, src the
// "file.py:line" of the logger header. It does nothing when no server runs.
func (d *Deployment) Log(proc, level, src, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	if s == nil || !s.running {
		return
	}
	d.logLocked(s, d.vlogLocked(s, proc, level, src, msg))
}

// AppendLog appends raw lines (e.g. a profiler table printed with print())
// to the running server's log. It does nothing when no server runs.
func (d *Deployment) AppendLog(lines ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	if s == nil || !s.running {
		return
	}
	d.logLocked(s, lines...)
}

// ProcPID returns the pid of a process prefix name of the running server
// ("APIServer", "EngineCore_DP0", "Worker_TP3"), or 0.
func (d *Deployment) ProcPID(proc string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.server == nil {
		return 0
	}
	return d.server.procPID(proc)
}

func (s *serverProc) procPID(proc string) int {
	switch {
	case proc == "APIServer":
		return s.pid
	case strings.HasPrefix(proc, "EngineCore"):
		return s.enginePID
	case strings.HasPrefix(proc, "Worker_TP"):
		n, err := strconv.Atoi(strings.TrimPrefix(proc, "Worker_TP"))
		n -= s.rankBase
		if err == nil && n >= 0 && n < len(s.workerPIDs) {
			return s.workerPIDs[n]
		}
	}
	return 0
}

func (d *Deployment) logLocked(s *serverProc, lines ...string) {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	d.fs.appendTo(s.logPath, []byte(b.String()))
}

// vlogLocked formats a vLLM logger line with the current time (UTC, as in a
// container).
func (d *Deployment) vlogLocked(s *serverProc, proc, level, src, msg string) string {
	ts := time.Now().UTC().Format("01-02 15:04:05")
	line := fmt.Sprintf("%s %s [%s] %s", level, ts, src, msg)
	if proc != "" {
		if pid := s.procPID(proc); pid != 0 {
			line = fmt.Sprintf("(%s pid=%d) %s", proc, pid, line)
		}
	}
	return line
}

var (
	reLaunch   = regexp.MustCompile(`vllm\s+serve\b|python[0-9.]*\s+-m\s+vllm\.entrypoints|docker\s+run\b.*(?:vllm|sglang)|python[0-9.]*\s+-m\s+sglang\.launch_server|sglang\s+serve\b`)
	reRedirect = regexp.MustCompile(`(?:^|[^0-9&>])>>?\s*([^\s&;|'"<>()]+)`)
	reName     = regexp.MustCompile(`--name[= ]+([A-Za-z0-9_.-]+)`)
	reAPIKey   = regexp.MustCompile(`--api-key[= ]+([A-Za-z0-9_.-]+)`)
	reMark     = regexp.MustCompile(`PROFDECK_LAUNCH=([0-9a-f]+)`)
	reProfDir  = regexp.MustCompile(`(?:VLLM|SGLANG)_TORCH_PROFILER_DIR=([^\s'"]+)|"torch_profiler_dir"\s*:\s*"([^"]+)"`)
)

// notLaunchers are commands that mention a launch line without running it.
var notLaunchers = map[string]bool{"pkill": true, "pgrep": true, "ps": true, "grep": true, "echo": true,
	"printf": true, "cat": true, "kill": true, "test": true, "which": true, "command": true}

// isLaunch reports whether cmd starts the vLLM server.
func isLaunch(cmd string) bool {
	if !reLaunch.MatchString(cmd) {
		return false
	}
	w := Words(firstWord(strings.TrimSpace(cmd)))
	return len(w) == 0 || !notLaunchers[w[0]]
}

// runLaunch (re)starts the simulated server as a detached launch command
// does, and prints its pid (what `& echo $!` prints).
func (d *Deployment) runLaunch(cmd string, out func(remote.Line)) error {
	logPath := d.opt.LogPath
	if p := launchLog(cmd); p != "" {
		logPath = p
	}
	cmd += d.sourcedEnv(cmd)
	profiler := strings.Contains(cmd, "--profiler-config") || strings.Contains(cmd, "VLLM_TORCH_PROFILER_DIR=") ||
		strings.Contains(cmd, "SGLANG_TORCH_PROFILER_DIR=")
	pid := d.launchCmd(logPath, profiler, cmd)
	Stdout(out, strconv.Itoa(pid))
	return nil
}

// reSourced is an environment file a launch exports and removes (set -a;
// . FILE; set +a), as the load engine writes it.
var reSourced = regexp.MustCompile(`set -a; \. ('[^']*'|\S+?); set \+a`)

// sourcedEnv is the content of the environment file cmd reads (which is
// removed, as the launched shell does), or "".
func (d *Deployment) sourcedEnv(cmd string) string {
	m := reSourced.FindStringSubmatch(strings.ReplaceAll(cmd, `'\''`, "'"))
	if m == nil {
		return ""
	}
	p := strings.Trim(m[1], "'")
	b, err := d.fs.read(p)
	if err != nil {
		return ""
	}
	d.fs.remove(p)
	return "\n" + string(b)
}

// launchLog finds where a launch command sends its output: the last
// top-level redirect (its target unquoted), else one inside the quoted
// inner command; /dev/null does not count.
func launchLog(cmd string) string {
	if p := topLevelRedirect(cmd); p != "" {
		return p
	}
	ms := reRedirect.FindAllStringSubmatch(cmd, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		if p := ms[i][1]; p != "/dev/null" {
			return p
		}
	}
	return ""
}

// topLevelRedirect returns the target of the last stdout redirect outside
// quotes (> FILE, >> FILE, 1> FILE), unquoted.
func topLevelRedirect(cmd string) string {
	last := ""
	topLevel(cmd, func(i int) int {
		if cmd[i] != '>' {
			return i
		}
		if i > 0 && (cmd[i-1] == '2' || cmd[i-1] == '&') && (i < 2 || cmd[i-2] == ' ') {
			return i // 2> or &>: not stdout alone
		}
		j := i + 1
		if j < len(cmd) && cmd[j] == '>' {
			j++
		}
		if j < len(cmd) && cmd[j] == '&' {
			return i // >&2
		}
		rest := strings.TrimLeft(cmd[j:], " \t")
		if w := Words(firstWord(rest)); len(w) == 1 && w[0] != "/dev/null" {
			last = w[0]
		}
		return j - 1
	})
	return last
}

// firstWord returns the first shell word of s, quotes included.
func firstWord(s string) string {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>':
			return s[:i]
		}
	}
	return s
}

// launch starts the server with the default log (AutoStart).
func (d *Deployment) launch(logPath string, profiler bool) int {
	return d.launchCmd(logPath, profiler, "")
}

func (d *Deployment) launchCmd(logPath string, profiler bool, cmd string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.server; old != nil && old.running {
		d.exitLocked(old, phases.StageStopped)
	}
	now := time.Now()
	s := &serverProc{
		pid:      d.allocPIDLocked(1),
		logPath:  clean(logPath),
		start:    now,
		running:  true,
		stage:    phases.StageStarting,
		version:  simVLLM,
		profiler: profiler,
		stallAt:  d.opt.StallAtGiB,
		shards:   64,
		rankBase: d.rankBase(),
	}
	if d.opt.StallWhenProfiling && !profiler {
		s.stallAt = 0
	}
	if profiler && d.opt.ProfilerStallAtGiB > 0 {
		s.stallAt = d.opt.ProfilerStallAtGiB
	}
	if s.stallAt > 0 {
		if d.opt.StallOnce && d.stalls > 0 {
			s.stallAt = 0
		} else {
			d.stalls++
		}
	}
	if strings.Contains(cmd, "--profiler-config") {
		s.version = "0.13.0"
	}
	if m := reName.FindStringSubmatch(cmd); m != nil {
		s.container = m[1]
	}
	if m := reAPIKey.FindStringSubmatch(cmd); m != nil {
		s.apiKey = m[1]
	}
	s.identify(cmd)
	if m := reProfDir.FindStringSubmatch(cmd); m != nil {
		s.profDir = m[1] + m[2]
	}
	if profiler && s.profDir == "" {
		s.profDir = "/tmp/vllm_profile-" + remote.SimUID
	}
	s.enginePID = d.allocPIDLocked(130 + d.rng.Intn(40))
	for i := 0; i < d.opt.GPUs; i++ {
		s.workerPIDs = append(s.workerPIDs, d.allocPIDLocked(1+d.rng.Intn(3)))
	}
	// Each GPU loads at a slightly different rate; the slowest sets the pace.
	s.wEnd = make([]float64, d.opt.GPUs)
	slowest := d.rng.Intn(d.opt.GPUs)
	for i := range s.wEnd {
		r := 0.92 + 0.07*d.rng.Float64()
		if i == slowest {
			r = 1
		}
		s.wEnd[i] = fracWeights0 + (fracWeights1-fracWeights0)*r
	}
	d.profiler = profiler
	d.server = s
	for i := range d.gpus {
		d.gpus[i].usedGiB = 0
		d.gpus[i].releaseFrom = 0
	}
	d.emu.SetReady(false)
	d.emu.Relaunch(launchEmulator(cmd, d.opt.Emulator, d.step, d.modelSteps))
	// The log is replaced, as a shell redirect (>) truncates it.
	_ = d.fs.write(s.logPath, nil, 0o644)
	if d.sglang() {
		s.steps = d.sglangScript(s)
	} else {
		s.steps = d.script(s)
	}
	return s.pid
}

func (d *Deployment) allocPIDLocked(gap int) int {
	d.nextPID += gap
	return d.nextPID
}

// stop stops the server as a signal does. A KILL leaves no log lines.
func (d *Deployment) stop(signal string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	if s == nil || !s.running {
		return false
	}
	if signal != "KILL" && signal != "9" && !d.sglang() {
		d.logLocked(s,
			d.vlogLocked(s, "APIServer", "INFO", "launcher.py:110", "Shutting down FastAPI HTTP server."),
			fmt.Sprintf("(APIServer pid=%d) INFO:     Shutting down", s.pid),
			fmt.Sprintf("(APIServer pid=%d) INFO:     Waiting for application shutdown.", s.pid),
			fmt.Sprintf("(APIServer pid=%d) INFO:     Application shutdown complete.", s.pid))
	}
	d.exitLocked(s, phases.StageStopped)
	return true
}

// exitLocked ends the server process: connections drop, health fails, GPU
// memory is given back over releaseTime.
func (d *Deployment) exitLocked(s *serverProc, stage string) {
	s.running = false
	s.stage = stage
	d.node.atKV.Store(false)
	d.profiler = false
	d.emu.SetReady(false)
	d.dropConnsLocked()
	now := time.Now()
	for i := range d.gpus {
		d.gpus[i].releaseFrom = d.gpus[i].usedGiB
		d.gpus[i].releaseAt = now
	}
}

// tick advances the simulation to now: memory, log lines, stats.
func (d *Deployment) tick(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.server
	if s == nil || !s.running {
		d.releaseLocked(now)
		return
	}
	d.holdAtCollectiveLocked(s, now)
	f := now.Sub(s.start).Seconds() / d.opt.LoadTime.Seconds()
	d.growLocked(s, f)
	for !s.stalled && s.running && s.next < len(s.steps) && s.steps[s.next].at <= f {
		st := s.steps[s.next]
		s.next++
		st.run(d, s, now)
	}
	d.publishLocked(s)
	if s.running && s.stage == phases.StageReady {
		d.statsLocked(s, now)
	}
}

// identify keeps what a host's /proc shows of the launch: its command line
// and the mark in its environment (PROFDECK_LAUNCH).
func (s *serverProc) identify(cmd string) {
	s.cmdline = cmd
	if m := reMark.FindStringSubmatch(cmd); m != nil {
		s.mark = m[1]
	}
}

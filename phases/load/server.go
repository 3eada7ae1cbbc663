package load

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/remote"
)

// Settings are how the serving process is launched, where it logs and how
// it is stopped.
type Settings struct {
	Launch      string            // launch command (run detached on the host)
	Log         string            // the server's log file on the host (needed to start it)
	Container   string            // docker container, when the server runs in one
	Env         map[string]string // extra environment for the launch
	ProfilerDir string            // where the torch profiler writes
	// WorkDir is the private folder on the host ({uid}: the user's uid)
	// the launch's environment file goes to; beside the log when empty.
	WorkDir string
}

// Server starts, stops and restarts the serving process from its settings. Start runs the launch command detached in its own
// session (setsid + nohup, output to the log file), so it outlives the SSH
// connection; its pid (= process group) is kept in PIDFile on the host so a
// later profdeck can stop it. With Settings.Container set, Stop uses
// `docker stop`.
type Server struct {
	Host     remote.Host
	Settings Settings
	// PIDFile on the host (default: the log path + ".pid").
	PIDFile string
	// GivenPID is a process the operator named (--stop-pid) for Stop to
	// end when profdeck's own launch is gone (see StopPID); 0 for none.
	GivenPID int
	// ReleasedBelowGiB: Stop waits until every GPU uses less than this.
	ReleasedBelowGiB float64
	// StopTimeout bounds the wait for the process to exit and for the GPU
	// memory to be released. Stop refuses a Server without both.
	StopTimeout time.Duration
	// Emitter, when set, receives KindLoadServer events for each step
	// that no emitter of the call's context (WithEmitter) takes.
	Emitter *phases.Emitter
	// Workers are the other nodes of a deployment on several hosts, each a
	// Server of its own (its host, its worker launch, its log): Start
	// launches them in order after the head, Stop stops every node and
	// waits until each one's GPU memory is released.
	Workers []*Server
	// Node names the host as one node of several (its events say so);
	// NodeEnv is in its launch's environment (PROFDECK_NODE_RANK …).
	Node    string
	NodeEnv map[string]string

	head *Server // a worker's head
	// pid is the process group started or read from the pid file, 0 when
	// none; the cockpit's keys and a campaign run both reach it, and the
	// followers too.
	mu        sync.Mutex
	rec       launchRecord
	followers []Follower
	stopNote  string // what the last stop measured of the GPUs' memory
}

// Follower is told of the server's launches and stops, whoever asks for
// them: a Watcher's MarkStarted follows a new load, its MarkStopped keeps a
// stopped server from reading as a stall.
type Follower interface {
	MarkStarted()
	MarkStopped()
}

// Follow adds f to those told of every launch (just before the launch
// command) and stop (when Stop begins).
func (s *Server) Follow(f Follower) {
	s.mu.Lock()
	s.followers = append(s.followers, f)
	s.mu.Unlock()
}

func (s *Server) tell(started bool) {
	s.mu.Lock()
	fs := slices.Clone(s.followers)
	s.mu.Unlock()
	for _, f := range fs {
		if started {
			f.MarkStarted()
		} else {
			f.MarkStopped()
		}
	}
}

type emitterKey struct{}

// WithEmitter is ctx carrying em: the server's events for a call made with
// it go to em (the campaign run's own channel, the Load pane's), so callers
// sharing one Server each get their own events.
func WithEmitter(ctx context.Context, em *phases.Emitter) context.Context {
	return context.WithValue(ctx, emitterKey{}, em)
}

func (s *Server) known() launchRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

func (s *Server) setRecord(r launchRecord) {
	s.mu.Lock()
	s.rec = r
	s.mu.Unlock()
}

// LogPath is the server's log on the host.
func (s *Server) LogPath() string { return s.Settings.Log }

func (s *Server) pidFile() string {
	if s.PIDFile != "" {
		return s.PIDFile
	}
	return s.LogPath() + ".pid"
}

func (s *Server) emit(ctx context.Context, action, detail string) {
	em, _ := ctx.Value(emitterKey{}).(*phases.Emitter)
	if em == nil {
		em = s.Emitter
	}
	if em == nil && s.head != nil {
		em = s.head.Emitter // set on the head after NodeServers
	}
	if em != nil {
		em.Emit(ctx, phases.KindLoadServer, phases.ServerEvent{Action: action, Detail: detail, Node: s.Node})
	}
}

// redactedError is an error whose text passes through remote.ScrubSecrets,
// for errors that quote the launch command; errors.Is and errors.As still
// see the original.
type redactedError struct{ err error }

func (e redactedError) Error() string { return remote.ScrubSecrets(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// Start launches the server detached and returns its pid (its process
// group); on several nodes the head first, then each worker in order. It
// refuses when a server it started is still running.
func (s *Server) Start(ctx context.Context, extraFlags []string, extraEnv map[string]string) (int, error) {
	for _, w := range s.Workers {
		if strings.TrimSpace(w.Settings.Launch) == "" {
			return 0, fmt.Errorf("no launch command for node %s: set server.worker_launch in the campaign file", w.Host.Name())
		}
	}
	pid, err := s.startOne(ctx, extraFlags, extraEnv)
	if err != nil {
		return pid, err
	}
	for _, w := range s.Workers {
		if _, err := w.startOne(ctx, extraFlags, extraEnv); err != nil {
			return pid, fmt.Errorf("node %s: %w", w.Host.Name(), err)
		}
	}
	return pid, nil
}

func (s *Server) startOne(ctx context.Context, extraFlags []string, extraEnv map[string]string) (int, error) {
	if strings.TrimSpace(s.Settings.Log) == "" {
		return 0, &phases.InputError{Err: errors.New("Settings.Log: not set: the server's log file on the host")}
	}
	if pid, alive := s.Running(ctx); alive {
		return pid, fmt.Errorf("a server is already running (pid %d): stop it first", pid)
	}
	extraFlags, extraEnv, err := s.profilerDir(ctx, extraFlags, extraEnv)
	if err != nil {
		return 0, err
	}
	cmd, err := s.LaunchCommand(extraFlags, extraEnv)
	if err != nil {
		return 0, err
	}
	env, err := s.launchEnv(extraEnv)
	if err != nil {
		return 0, err
	}
	log := s.LogPath()
	if dir := path.Dir(log); dir != "." && dir != "/" {
		_, _ = remote.Output(ctx, s.Host, "mkdir -p "+remote.QuotePath(dir))
	}
	if !remote.IsSimulated(s.Host) {
		// The log is created anew, never through a link another user
		// put there; the launch's output then goes to this file.
		if err := remote.Create(ctx, s.Host, log, nil, "644"); err != nil {
			return 0, fmt.Errorf("the server's log: %w", err)
		}
	}
	envPath := ""
	if len(env) > 0 {
		// The values go to a file only its owner reads, created anew in
		// a private folder, which the launched shell reads and removes:
		// never onto a command line, where ps shows them to every user.
		if envPath, err = s.envFile(ctx); err != nil {
			return 0, err
		}
		if err := remote.Create(ctx, s.Host, envPath, envFileText(env), "600"); err != nil {
			return 0, fmt.Errorf("writing the launch's environment to %s: %w", envPath, redactedError{err})
		}
	}
	if c := s.Settings.Container; c != "" {
		// A stopped container of the same name would block `docker run --name`.
		_, _ = remote.Output(ctx, s.Host, "docker rm "+remote.Quote(c)+" >/dev/null 2>&1 || true")
	}
	s.tell(true)
	mark := newMark()
	out, err := remote.Output(ctx, s.Host, detachedCommand(launchScript(cmd, envPath), log, mark))
	if err != nil {
		if envPath != "" {
			_, _ = remote.Output(ctx, s.Host, "rm -f "+remote.QuotePath(envPath))
		}
		// The host's error quotes the command, secrets included.
		return 0, fmt.Errorf("starting the server: %w", redactedError{err})
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("starting the server: expected a pid, got %q", strings.TrimSpace(out))
	}
	rec := launchRecord{PID: pid, Mark: mark}
	if in, err := s.probe(ctx, pid, mark); err == nil && !in.Gone {
		rec.Start = in.Start
	}
	s.setRecord(rec)
	shown := remote.ScrubSecrets(cmd) + envNote(s.shownEnv(extraEnv))
	if err := remote.Create(ctx, s.Host, s.pidFile(), []byte(rec.String()), "644"); err != nil {
		s.emit(ctx, "start", fmt.Sprintf("pid %d (could not write %s: %v)", pid, s.pidFile(), err))
	} else {
		s.emit(ctx, "start", fmt.Sprintf("pid %d: %s", pid, shown))
	}
	return pid, nil
}

// PID is the server's pid as last known (from Start or the pid file), 0
// when none.
func (s *Server) PID(ctx context.Context) int { return s.record(ctx).PID }

// record is the launch as last known (from Start or the pid file).
func (s *Server) record(ctx context.Context) launchRecord {
	if r := s.known(); r.PID > 0 {
		return r
	}
	b, err := s.Host.ReadFile(ctx, s.pidFile())
	if err != nil {
		return launchRecord{}
	}
	r := parseRecord(b)
	if r.PID <= 0 {
		return launchRecord{}
	}
	s.setRecord(r)
	return r
}

// Running reports the known pid and whether it is alive and the process
// the launch started (see verify): a pid that is another process now, or
// another user's, is not running.
func (s *Server) Running(ctx context.Context) (int, bool) {
	rec := s.record(ctx)
	if rec.PID <= 0 {
		return 0, false
	}
	alive, err := s.verify(ctx, rec)
	return rec.PID, alive && err == nil
}

func (s *Server) alive(ctx context.Context, pid int) bool {
	_, err := remote.Output(ctx, s.Host, fmt.Sprintf("kill -0 %d", pid))
	return err == nil
}

// checkStop refuses a stop whose bounds are not given; the error names
// the field (the campaign holds their defaults).
func (s *Server) checkStop() error {
	switch {
	case s.StopTimeout <= 0:
		return &phases.InputError{Err: fmt.Errorf("StopTimeout %s: want the bound of a stop, more than 0", s.StopTimeout)}
	case s.ReleasedBelowGiB <= 0:
		return &phases.InputError{Err: fmt.Errorf("ReleasedBelowGiB %g: want the GPU memory a stopped server leaves, more than 0", s.ReleasedBelowGiB)}
	}
	return nil
}

// Stop ends the server (its whole process group, or its container) and
// waits until the GPUs' memory is released: on several nodes, on every node
// (the head first), each node's GPUs released before the next is stopped. A
// worker node with no server left is not an error.
func (s *Server) Stop(ctx context.Context) error {
	err := s.stopOne(ctx)
	for _, w := range s.Workers {
		if werr := w.stopOne(ctx); werr != nil && !errors.Is(werr, errNoServer) {
			err = errors.Join(err, fmt.Errorf("node %s: %w", w.Host.Name(), werr))
		}
	}
	return err
}

// errNoServer is a Stop that found nothing to stop.
var errNoServer = errors.New("no server to stop")

func (s *Server) stopOne(ctx context.Context) error {
	if err := s.checkStop(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.StopTimeout)
	defer cancel()
	s.tell(false)
	if c := s.Settings.Container; c != "" {
		s.emit(ctx, "stop", "docker stop "+c)
		if _, err := remote.Output(ctx, s.Host, "docker stop "+remote.Quote(c)); err != nil {
			return fmt.Errorf("docker stop %s: %w", c, err)
		}
	} else if err := s.stopLaunched(ctx); err != nil {
		return err
	}
	measured, err := s.waitReleased(ctx)
	if err != nil {
		return err
	}
	note := "GPU memory released"
	if !measured {
		note = "GPU memory not measured (no nvidia-smi on " + s.Host.Name() + ")"
	}
	s.mu.Lock()
	s.stopNote = note
	s.mu.Unlock()
	s.emit(ctx, "stopped", note)
	return nil
}

// StopNote is what the last stop measured of the GPUs' memory: "GPU
// memory released", or that it was not measured (no nvidia-smi).
func (s *Server) StopNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopNote == "" {
		return "GPU memory not measured"
	}
	return s.stopNote
}

// stopLaunched signals the process group the launch started, once it is
// checked to be that process (see verify), and waits for it to exit.
// Nothing else is stopped: with no such process, the error says so and
// names what holds the GPUs.
func (s *Server) stopLaunched(ctx context.Context) error {
	rec := s.record(ctx)
	alive, err := false, error(nil)
	if rec.PID > 0 {
		alive, err = s.verify(ctx, rec)
	}
	if !alive {
		why := "no pid in " + s.pidFile()
		switch {
		case err != nil:
			why = err.Error()
		case rec.PID > 0:
			why = fmt.Sprintf("pid %d from %s has exited", rec.PID, s.pidFile())
			s.clearPID(ctx)
		}
		if s.GivenPID > 0 {
			s.emit(ctx, "stop", "no server of profdeck's ("+why+"): stopping the given pid "+strconv.Itoa(s.GivenPID))
			return s.StopPID(ctx, s.GivenPID)
		}
		s.emit(ctx, "stop", "no server of profdeck's to stop: "+why)
		return fmt.Errorf("%w on %s: %s; %s", errNoServer, s.Host.Name(), why, s.GPUHolders(ctx))
	}
	s.emit(ctx, "stop", fmt.Sprintf("kill -TERM process group %d", rec.PID))
	if err := s.signal(ctx, rec, "TERM"); err != nil {
		if alive, _ := s.verify(ctx, rec); alive {
			return fmt.Errorf("stopping process group %d: %w", rec.PID, err)
		}
	}
	if err := s.waitExit(ctx, rec); err != nil {
		return err
	}
	s.clearPID(ctx)
	return nil
}

// clearPID forgets the pid of a server that is gone, and empties the pid
// file: left behind, it would name whatever process gets that pid next, and
// a later Stop would signal it.
func (s *Server) clearPID(ctx context.Context) {
	s.setRecord(launchRecord{})
	if err := remote.Create(ctx, s.Host, s.pidFile(), nil, "644"); err != nil {
		s.emit(ctx, "stop", fmt.Sprintf("could not clear %s: %v", s.pidFile(), err))
	}
}

// waitExit waits for the launch's process to exit, escalating to SIGKILL
// (checked as the TERM was) after 30 s.
func (s *Server) waitExit(ctx context.Context, rec launchRecord) error {
	pid := rec.PID
	killAt := time.Now().Add(30 * time.Second)
	killed := false
	for s.alive(ctx, pid) {
		if !killed && time.Now().After(killAt) {
			killed = true
			s.emit(ctx, "stop", fmt.Sprintf("still running after 30 s: kill -KILL process group %d", pid))
			_ = s.signal(ctx, rec, "KILL")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server pid %d did not exit: %w", pid, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// waitReleased polls nvidia-smi until every GPU is below
// ReleasedBelowGiB; measured is false when there is no nvidia-smi to ask.
func (s *Server) waitReleased(ctx context.Context) (measured bool, err error) {
	limit := s.ReleasedBelowGiB
	for {
		out, err := remote.Output(ctx, s.Host, smi.QueryCommand)
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Errorf("waiting for GPU memory to be released: %w", ctx.Err())
			}
			return false, nil
		}
		gpus := smi.ParseQuery(out)
		if len(gpus) == 0 {
			return false, nil
		}
		var busy []string
		for _, g := range gpus {
			if g.MemoryUsedMiB != nil && *g.MemoryUsedMiB/1024 >= limit {
				busy = append(busy, fmt.Sprintf("GPU%d %.1f GiB", g.Index, *g.MemoryUsedMiB/1024))
			}
		}
		if len(busy) == 0 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("GPU memory still in use after stopping: %s", strings.Join(busy, ", "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Restart stops the server (when one is running) and starts it again with
// the extra flags and environment.
func (s *Server) Restart(ctx context.Context, extraFlags []string, extraEnv map[string]string) (int, error) {
	s.emit(ctx, "restart", remote.ScrubSecrets(strings.TrimSpace(strings.Join(extraFlags, " ")+envNote(extraEnv))))
	if _, alive := s.Running(ctx); alive || s.Settings.Container != "" || s.workersAlive(ctx) {
		if err := s.Stop(ctx); err != nil {
			return 0, err
		}
	}
	return s.Start(ctx, extraFlags, extraEnv)
}

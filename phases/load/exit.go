package load

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
)

// A server process that exits during its load (a typo in the launch, an
// argument vLLM refuses, a crash with no line the log parser knows) is a
// failed load at once, with its log's last lines: the watcher looks at the
// launch's process group (its pid is in the pid file Server.Start keeps)
// each poll.

const (
	// tailLines is how many of the log's last lines an exit shows.
	tailLines = 12
	// tailWidth bounds one such line.
	tailWidth = 300
	// exitFresh: a dead pid whose log was last written later than this
	// after its pid file may be a stale pid file beside a log someone
	// else writes; it counts only when the watcher saw it alive.
	exitFresh = 2 * time.Minute
	// exitCatchUp bounds the wait for the log's last lines to be read
	// (a last line without its newline never is).
	exitCatchUp = 10 * time.Second
)

// procState is the launch's process group as one poll saw it.
type procState struct {
	known bool // a pid file names a pid
	pid   int
	alive bool
	// pidAt and logAt are the pid file's and the log's modification
	// times (Unix seconds on the host), 0 when unknown; logSize is the
	// log's size.
	pidAt, logAt, logSize int64
}

// procCheckCmd prints "PID alive|dead DOCKER PIDFILE_MTIME LOG_MTIME
// LOG_SIZE", or
// nothing when the pid file names no pid. The group is alive while one of
// its processes is not a zombie, and so is the launched process itself
// before its setsid makes the group (a loaded host may take a while); a
// container that runs keeps it alive (a `docker run -d` returns at once).
func procCheckCmd(pidFile, logPath, container string) string {
	pf, lf := remote.QuotePath(pidFile), remote.QuotePath(logPath)
	docker := ""
	if container != "" {
		docker = `if [ $a = dead ]; then d=$(docker inspect -f '{{.State.Running}}' ` + remote.Quote(container) + ` 2>/dev/null) || d=absent; fi; `
	}
	return `p=$(head -n 1 ` + pf + ` 2>/dev/null | cut -d ' ' -f 1 | tr -dc 0-9 | head -c 12); [ -n "$p" ] || exit 0; a=dead; d=-; ` +
		`if [ -r /proc/self/stat ]; then for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < "$f" || continue; ` +
		`set -- ${l##*") "}; if [ "$1" != Z ] && { [ "$3" = "$p" ] || [ "$f" = /proc/$p/stat ]; }; then a=alive; break; fi; done; ` +
		`elif kill -0 -"$p" 2>/dev/null || kill -0 "$p" 2>/dev/null; then a=alive; fi; ` + docker +
		`echo "$p $a $d $(stat -c %Y ` + pf + ` 2>/dev/null || echo 0) $(stat -L -c '%Y %s' ` + lf + ` 2>/dev/null || echo 0 0)"`
}

// parseProcState reads procCheckCmd's output.
func parseProcState(out string) procState {
	f := strings.Fields(out)
	if len(f) < 6 {
		return procState{}
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return procState{}
	}
	st := procState{known: true, pid: pid, alive: f[1] == "alive" || f[2] == "true"}
	st.pidAt, _ = strconv.ParseInt(f[3], 10, 64)
	st.logAt, _ = strconv.ParseInt(f[4], 10, 64)
	st.logSize, _ = strconv.ParseInt(f[5], 10, 64)
	return st
}

// procCheck looks at the launch's process group (nothing when the watcher
// has no pid file, or the host is simulated).
func (w *Watcher) procCheck(ctx context.Context) procState {
	if w.cfg.PIDFile == "" || remote.IsSimulated(w.cfg.Host) || !w.loading.Load() {
		return procState{}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := remote.Output(ctx, w.cfg.Host, procCheckCmd(w.cfg.PIDFile, w.cfg.LogPath, w.cfg.Container))
	if err != nil {
		return procState{}
	}
	return parseProcState(out)
}

// exitSeen is the launch's exit, seen by a poll.
type exitSeen struct {
	pid      int
	at       time.Time
	logSize  int64 // the log's size then: its last lines are read when the follow gets there
	reported bool
}

// proc folds one look at the process group in: a group that is gone on
// two looks in a row while the load is neither ready, stopped nor already
// failed is an exit, from the first of them, reported failGrace later
// (its last lines reach the log meanwhile). One look can miss a group
// whose only process forked a child and exited while /proc was read.
func (s *run) proc(now time.Time, p procState) {
	if !p.known || s.tr.ready || s.tr.stopped || s.tr.failure != nil || s.exit != nil {
		return
	}
	if p.alive {
		s.seenAlive, s.goneAt = p.pid, time.Time{}
		return
	}
	fresh := p.pidAt > 0 && p.logAt > 0 && p.logAt <= p.pidAt+int64(exitFresh/time.Second)
	if s.seenAlive != p.pid && !fresh {
		return // a stale pid file: the log is someone else's
	}
	if s.goneAt.IsZero() {
		s.goneAt = now
		return
	}
	s.exit = &exitSeen{pid: p.pid, at: s.goneAt, logSize: p.logSize}
}

// exitTick reports an exit once its grace is over and the log is read to
// where it ended (or exitCatchUp has passed): a LoadFailure "exited" with
// the log's last lines, and the server's "exited" event.
func (s *run) exitTick(now time.Time) {
	e := s.exit
	if e == nil || e.reported || now.Sub(e.at) < failGrace || s.offset < e.logSize && now.Sub(e.at) < exitCatchUp {
		return
	}
	e.reported = true
	last := "(the log is empty)"
	if len(s.tail) > 0 {
		last = s.tail[len(s.tail)-1]
	}
	f := s.tr.Exited(phases.LoadFailure{Kind: vllmlog.FailExited, Line: last, Rank: -1,
		Tail: append([]string(nil), s.tail...), PID: e.pid})
	if f == nil {
		return // the log named the failure meanwhile
	}
	s.failAt = e.at
	s.tr.armed = true
	s.phaseStart() // an exit before any line is a load run too
	s.emit(phases.KindLoadServer, phases.ServerEvent{Action: "exited", Node: s.w.cfg.Node,
		Detail: fmt.Sprintf("process group %d exited during its load (%s in)", e.pid, units.Duration(e.at.Sub(s.tr.start).Seconds()))})
	s.emit(phases.KindLoadFailure, *f)
	s.emitState(now)
}

// keepTail keeps the log's last lines (a progress bar's last update, each
// line scrubbed of secrets and bounded) for an exit's report.
func (s *run) keepTail(line string) {
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > tailWidth {
		line = strings.ToValidUTF8(line[:tailWidth], "") + "…"
	}
	if len(s.tail) == tailLines {
		copy(s.tail, s.tail[1:])
		s.tail = s.tail[:tailLines-1]
	}
	s.tail = append(s.tail, remote.ScrubSecrets(line))
}

// FailureText is a load's failure in one line: "KIND: evidence", or for an
// exit the process and the log's last line.
func FailureText(f *phases.LoadFailure) string {
	if f.Kind != vllmlog.FailExited {
		return f.Kind + ": " + f.Line
	}
	who := "the server process"
	if f.PID > 0 {
		who += fmt.Sprintf(" (pid %d)", f.PID)
	}
	return who + " exited during its load; the log's last line: " + f.Line
}

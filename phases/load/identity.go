package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/remote"
)

// What a stop signals: only the process the launch started. The pid file
// holds "PID START MARK": the launch's pid (its process group), its start
// time (/proc/PID/stat, clock ticks since boot) and a mark the launch put
// in the process's environment (PROFDECK_LAUNCH), which outlives the
// shell's exec into the server and which only the process's owner (or
// root) can read. Before any signal the process at PID must be alive,
// above 1, owned by the user profdeck runs as, started at START and carry
// MARK; anything else is left alone and said.

// markVar is the launch's environment variable holding its mark.
const markVar = "PROFDECK_LAUNCH"

// launchRecord is one launch as its pid file keeps it.
type launchRecord struct {
	PID   int
	Start string // start time in clock ticks since boot, "" when unknown
	Mark  string
}

func (r launchRecord) String() string { return fmt.Sprintf("%d %s %s\n", r.PID, r.Start, r.Mark) }

// parseRecord reads a pid file; a pid alone (no start time or mark) is a
// record that cannot be checked, and a stop refuses it.
func parseRecord(b []byte) launchRecord {
	f := strings.Fields(string(b))
	var r launchRecord
	if len(f) > 0 {
		r.PID, _ = strconv.Atoi(f[0])
	}
	if len(f) >= 3 {
		r.Start, r.Mark = f[1], f[2]
	}
	return r
}

// newMark is a fresh launch mark.
func newMark() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// procInfo is what the host says of a pid (probeCmd).
type procInfo struct {
	Gone       bool
	Start      string
	UID, Me    string
	Marked     bool
	Cmd        string
	HasRecords bool // the answer was read
}

// probeCmd prints what identifies the process pid: its start time, its
// owner and ours, whether it carries mark, and its command line; "gone"
// when it is not running (or a zombie).
func probeCmd(pid int, mark string) string {
	p := strconv.Itoa(pid)
	return `pd_pid=` + p + `; if read -r l < /proc/` + p + `/stat 2>/dev/null; then set -- ${l##*") "}; ` +
		`if [ "$1" = Z ]; then echo gone; exit 0; fi; echo "start ${20}"; echo "uid $(stat -c %u /proc/` + p + `)"; echo "me $(id -u)"; ` +
		`if tr '\0' '\n' < /proc/` + p + `/environ 2>/dev/null | grep -qx ` + remote.Quote(markVar+"="+mark) + `; then echo marked; fi; ` +
		`printf 'cmd '; tr '\0' ' ' < /proc/` + p + `/cmdline; echo; else echo gone; fi`
}

func parseProbe(out string) procInfo {
	var in procInfo
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch k {
		case "gone":
			in.Gone, in.HasRecords = true, true
		case "start":
			in.Start, in.HasRecords = v, true
		case "uid":
			in.UID = v
		case "me":
			in.Me = v
		case "marked":
			in.Marked = true
		case "cmd":
			in.Cmd = strings.TrimSpace(v)
		}
	}
	return in
}

// probe asks the host about pid.
func (s *Server) probe(ctx context.Context, pid int, mark string) (procInfo, error) {
	out, err := remote.Output(ctx, s.Host, probeCmd(pid, mark))
	if err != nil {
		return procInfo{}, err
	}
	in := parseProbe(out)
	if !in.HasRecords {
		return in, fmt.Errorf("no answer about pid %d: %q", pid, remote.ScrubSecrets(strings.TrimSpace(out)))
	}
	return in, nil
}

// errNotOurs is a pid that is not the launch's process: nothing is sent.
type errNotOurs struct {
	PID    int
	Reason string
}

func (e *errNotOurs) Error() string {
	return fmt.Sprintf("pid %d is not the server profdeck launched (%s): not signalled", e.PID, e.Reason)
}

// verify checks that rec's pid is the process the launch started; alive
// false (and no error) when it is gone.
func (s *Server) verify(ctx context.Context, rec launchRecord) (alive bool, err error) {
	switch {
	case rec.PID <= 1:
		return false, &errNotOurs{rec.PID, "a pid of 1 or less names every process, or init"}
	case rec.Start == "" || rec.Mark == "":
		return false, &errNotOurs{rec.PID, "the pid file " + s.pidFile() + " holds no start time and launch mark"}
	}
	in, err := s.probe(ctx, rec.PID, rec.Mark)
	if err != nil {
		return false, err
	}
	switch {
	case in.Gone:
		return false, nil
	case in.Start != rec.Start:
		return false, &errNotOurs{rec.PID, fmt.Sprintf("another process now: started at tick %s, the launch at %s: %s", in.Start, rec.Start, shortCmd(in.Cmd))}
	case in.UID != in.Me:
		return false, &errNotOurs{rec.PID, fmt.Sprintf("owned by uid %s, not by uid %s: %s", in.UID, in.Me, shortCmd(in.Cmd))}
	case !in.Marked:
		return false, &errNotOurs{rec.PID, "it does not carry the launch's mark: " + shortCmd(in.Cmd)}
	}
	return true, nil
}

// shortCmd is a command line for a message: scrubbed of secrets, cut.
func shortCmd(c string) string {
	c = remote.ScrubSecrets(strings.TrimSpace(c))
	if len(c) > 120 {
		c = c[:117] + "..."
	}
	if c == "" {
		return "(no command line)"
	}
	return c
}

// signal sends sig to rec's process group once verify passes.
func (s *Server) signal(ctx context.Context, rec launchRecord, sig string) error {
	alive, err := s.verify(ctx, rec)
	if err != nil || !alive {
		return err
	}
	_, err = remote.Output(ctx, s.Host, fmt.Sprintf("kill -%s -%d", sig, rec.PID))
	return err
}

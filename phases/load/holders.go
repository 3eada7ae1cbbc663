package load

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/remote"
)

// Holder is a process that holds GPU memory on the host.
type Holder struct {
	PID     int
	PGID    int // its process group (a launch of profdeck's leads its own)
	User    string
	Command string
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d (%s) %s", h.PID, h.User, shortCmd(h.Command))
}

// Holders lists the processes holding the host's GPUs (nvidia-smi's
// compute apps, with their owner and command line from ps).
func (s *Server) Holders(ctx context.Context) ([]Holder, error) {
	out, err := remote.Output(ctx, s.Host, "nvidia-smi --query-compute-apps=pid --format=csv,noheader")
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi: %w", err)
	}
	var pids []string
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if p := strings.TrimSpace(l); p != "" && !seen[p] {
			if _, err := strconv.Atoi(p); err == nil {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	if len(pids) == 0 {
		return nil, nil
	}
	out, _ = remote.Output(ctx, s.Host, "ps -o pid=,pgid=,user=,args= -p "+strings.Join(pids, ","))
	var hs []Holder
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		pgid, gerr := strconv.Atoi(f[1])
		if err != nil || gerr != nil || !seen[f[0]] {
			continue
		}
		hs = append(hs, Holder{PID: pid, PGID: pgid, User: f[2], Command: strings.Join(f[3:], " ")})
	}
	return hs, nil
}

// OthersHolding lists the processes holding the GPUs outside the process
// group pgid (the launch of profdeck's that a stop would signal), for a
// question before that stop: a stop leaves them. None when a launch in a
// container holds the GPUs (its processes are not in the group) or when
// what holds them is unknown.
func (s *Server) OthersHolding(ctx context.Context, pgid int) []Holder {
	if s.Settings.Container != "" || strings.HasPrefix(strings.TrimSpace(s.Settings.Launch), "docker ") {
		return nil
	}
	hs, _ := s.Holders(ctx)
	var out []Holder
	for _, h := range hs {
		if h.PGID != pgid {
			out = append(out, h)
		}
	}
	return out
}

// GPUHolders says what holds the GPUs, for a stop that found no server of
// its own: the processes, and how to stop one, or that none does.
func (s *Server) GPUHolders(ctx context.Context) string {
	hs, err := s.Holders(ctx)
	switch {
	case err != nil:
		return "what holds the GPUs is unknown (" + remote.ScrubSecrets(err.Error()) + ")"
	case len(hs) == 0:
		return "no process holds the GPUs"
	}
	var b strings.Builder
	b.WriteString("holding the GPUs: ")
	for i, h := range hs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(h.String())
	}
	b.WriteString(" (profdeck stops one of these only when given its pid: --stop-pid PID)")
	return b.String()
}

// StopPID stops a process profdeck did not launch, named by the operator:
// it must be above 1, alive and owned by the user profdeck runs as. Its
// process group is signalled when it leads one, else the process alone.
func (s *Server) StopPID(ctx context.Context, pid int) error {
	if pid <= 1 {
		return fmt.Errorf("--stop-pid %d: want the pid of one process, more than 1", pid)
	}
	in, err := s.probe(ctx, pid, "-")
	switch {
	case err != nil:
		return err
	case in.Gone:
		return fmt.Errorf("--stop-pid %d: no such process on %s", pid, s.Host.Name())
	case in.UID != in.Me:
		return fmt.Errorf("--stop-pid %d: owned by uid %s, not by uid %s: not signalled", pid, in.UID, in.Me)
	}
	s.emit(ctx, "stop", fmt.Sprintf("kill -TERM %d (given): %s", pid, shortCmd(in.Cmd)))
	if _, err := remote.Output(ctx, s.Host, fmt.Sprintf("kill -TERM %d", pid)); err != nil {
		return fmt.Errorf("stopping pid %d: %w", pid, err)
	}
	return s.waitExit(ctx, launchRecord{PID: pid, Start: in.Start, Mark: "-"})
}

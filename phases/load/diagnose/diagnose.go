// Package diagnose explains why a server's load stopped. It gathers
// evidence from the host through remote.Host, all of it with ordinary tools
// (ps, /proc, nvidia-smi, docker top, py-spy when present): each server
// process's state, CPU use and read rate over a short window, each GPU's
// utilisation and memory, the last log line and stage per rank, and Python
// stacks grouped by their innermost frames. From these it names a verdict:
// weights I/O stopped, spinning in a collective, busy on the CPU, a rank
// behind the others, or the server process gone.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// maxStacks bounds how many processes py-spy dumps.
const maxStacks = 16

// Config says which server to diagnose and what the log already told.
type Config struct {
	Host remote.Host
	// PIDs are processes known to be the server's (the launch's pid);
	// PGID is the launch's process group (0: none): every process in it is
	// the server's. Container names a docker container whose processes
	// (docker top) are the server's.
	PIDs      []int
	PGID      int
	Container string
	// GPUApps counts the processes nvidia-smi lists on the GPUs as the
	// server's (true on a host dedicated to the server).
	GPUApps bool
	// Window is how long CPU use and reads are measured over.
	Window time.Duration
	// Ranks are the last log line and stage per rank, from the watcher.
	Ranks []phases.RankEvidence
	// Stage is the load's stage, Stalled how long nothing has moved.
	Stage   string
	Stalled time.Duration
	Trigger string // "stall" or "request"
}

// Validate checks that cfg is complete; the error names the field. The
// diagnosis fills in no default: the campaign (package campaign) holds
// them, and the load watcher passes its DiagnoseWindow.
func (cfg Config) Validate() error {
	switch {
	case cfg.Host == nil:
		return errors.New("Host: no host")
	case cfg.Window <= 0:
		return fmt.Errorf("Window %s: want the sampling window, more than 0", cfg.Window)
	case cfg.Trigger != "stall" && cfg.Trigger != "request":
		return fmt.Errorf("Trigger %q: want stall or request", cfg.Trigger)
	}
	return nil
}

// Diagnose gathers the evidence and names a verdict. It fails only when
// the host cannot run commands at all or cfg is incomplete (Validate);
// missing tools become notes.
func Diagnose(ctx context.Context, cfg Config) (*phases.Diagnosis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("diagnose: %w", err)
	}
	d := &phases.Diagnosis{Trigger: cfg.Trigger, StalledS: cfg.Stalled.Seconds(), Simulated: remote.IsSimulated(cfg.Host)}
	g := &gatherer{cfg: cfg, d: d}
	if err := g.gather(ctx); err != nil {
		return nil, err
	}
	d.Ranks = markBehind(cfg.Ranks)
	d.Verdict, d.Why = verdict(d, cfg)
	return d, nil
}

// gatherer collects one diagnosis's evidence.
type gatherer struct {
	cfg  Config
	d    *phases.Diagnosis
	pids []int
	gpu  map[int]gpuApp // pid → its GPU
}

func (g *gatherer) note(format string, a ...any) {
	g.d.Notes = append(g.d.Notes, fmt.Sprintf(format, a...))
}

func (g *gatherer) gather(ctx context.Context) error {
	if err := g.gpus(ctx); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	g.discover(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := g.sample(ctx); err != nil {
		return err
	}
	g.stacks(ctx)
	return ctx.Err()
}

// discover lists the server's processes: the known pids, the launch's
// process group, the container's processes and, when asked, the GPUs'.
func (g *gatherer) discover(ctx context.Context) {
	seen := map[int]bool{}
	add := func(pid int) {
		if pid > 0 && !seen[pid] {
			seen[pid] = true
			g.pids = append(g.pids, pid)
		}
	}
	for _, p := range g.cfg.PIDs {
		add(p)
	}
	if g.cfg.PGID > 0 {
		procs, err := listGroup(ctx, g.cfg.Host, g.cfg.PGID)
		if err != nil {
			g.note("ps: %v", err)
		}
		for _, p := range procs {
			add(p)
		}
	}
	if g.cfg.Container != "" {
		procs, err := dockerTop(ctx, g.cfg.Host, g.cfg.Container)
		if err != nil {
			g.note("docker top %s: %v", g.cfg.Container, err)
		}
		for _, p := range procs {
			add(p)
		}
	}
	if g.cfg.GPUApps {
		pids := make([]int, 0, len(g.gpu))
		for p := range g.gpu {
			pids = append(pids, p)
		}
		sort.Ints(pids)
		for _, p := range pids {
			add(p)
		}
	}
	if len(g.pids) > maxProcs {
		g.note("%d processes found; the first %d are sampled", len(g.pids), maxProcs)
		g.pids = g.pids[:maxProcs]
	}
}

// maxProcs bounds the processes one diagnosis samples.
const maxProcs = 64

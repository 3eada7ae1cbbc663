package nccl

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
)

// Script is the torchrun program that times the collectives (see nccl.py).
//
//go:embed nccl.py
var Script []byte

// Config is one NCCL run.
type Config struct {
	Host remote.Host
	// Torchrun is the launcher prefix, e.g. "torchrun" or
	// "docker exec -i vllm torchrun".
	Torchrun string
	// Python is the interpreter torchrun starts for each rank.
	Python  string
	NProc   int        // ranks per node
	Plan    model.Plan // hidden size, the step's all-reduce count, the EP dispatch size
	Batch   []int      // batch sizes M of the all-reduce burst (empty: the plan's)
	Tokens  []int      // All-to-All tokens per GPU (needed when the plan dispatches)
	WorkDir string     // where the script is uploaded on the host
	Force   bool
	Repeats int  // bursts timed per M (default 10)
	Iters   int  // all-to-alls per timed loop (default 20)
	NoGraph bool // skip the CUDA-graph burst
	OnText  func(remote.Line)
	// OnRaw receives every JSON line the script printed, unparsed.
	OnRaw func(string)
	// Nodes, when there are several, are every node of the deployment,
	// Host (the head, rank 0) first: one torchrun per node, NProc ranks
	// each, rendezvous at MasterAddr:MasterPort; the results come from
	// rank 0.
	Nodes      []remote.Host
	MasterAddr string // the head's address as the other nodes reach it
	MasterPort int    // torchrun's rendezvous port (needed with several nodes)
	// Env is set for torchrun on every node (NCCL_SOCKET_IFNAME …).
	Env map[string]string
}

func (cfg Config) batch() []int {
	if len(cfg.Batch) > 0 {
		return cfg.Batch
	}
	return cfg.Plan.Batch
}

// dispatches reports whether the plan's step has an All-to-All to time.
func (cfg Config) dispatches() bool {
	a := cfg.Plan.AllToAll
	return a != nil && a.BytesPerToken > 0
}

// Validate checks that cfg is complete; the error names the field. The
// run fills in no default: the campaign (package campaign) holds them.
func (cfg Config) Validate() error {
	switch {
	case cfg.Host == nil:
		return errors.New("Host: no host")
	case strings.TrimSpace(cfg.Torchrun) == "":
		return errors.New("Torchrun: not set: the launcher (e.g. torchrun)")
	case strings.TrimSpace(cfg.Python) == "":
		return errors.New("Python: not set: the interpreter each rank runs (e.g. python3)")
	case cfg.NProc < 1:
		return fmt.Errorf("NProc %d: want at least 1 rank per node", cfg.NProc)
	case strings.TrimSpace(cfg.WorkDir) == "":
		return errors.New("WorkDir: not set: where the script is uploaded on the host")
	case cfg.Plan.Hidden <= 0:
		return errors.New("Plan: the plan has no hidden size")
	case len(cfg.batch()) == 0:
		return errors.New("Batch: not set, and the plan has no batch sizes")
	case cfg.dispatches() && len(cfg.Tokens) == 0:
		return errors.New("Tokens: not set: the All-to-All's tokens per GPU")
	case len(cfg.Nodes) > 1 && (cfg.MasterPort < 1 || cfg.MasterPort > 65535):
		return fmt.Errorf("MasterPort %d: want torchrun's rendezvous port (1-65535)", cfg.MasterPort)
	}
	return nil
}

func join(v []int) string {
	l := gpubench.IntList(v)
	return l.String()
}

// Command is the torchrun command line that runs the uploaded script. The
// script reaches the ranks as an argument (python -c), so a launcher inside
// a container needs no access to the host's work dir.
func Command(cfg Config, scriptPath string) string {
	tr, py := launcher(cfg)
	var b strings.Builder
	fmt.Fprintf(&b, "%s --standalone --nproc-per-node %d --no-python %s -c \"$(cat %s)\"", tr, cfg.NProc, py, remote.Quote(scriptPath))
	b.WriteString(scriptArgs(cfg))
	return b.String()
}

// launcher is the torchrun launcher (cfg.Env set for it) and the python
// the ranks run.
func launcher(cfg Config) (torchrun, python string) {
	return withEnv(strings.TrimSpace(cfg.Torchrun), cfg.Env), cfg.python()
}

// python is the Python the ranks run.
func (cfg Config) python() string { return strings.TrimSpace(cfg.Python) }

func scriptArgs(cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, " --hidden %d --count %d --batch %s", cfg.Plan.Hidden, cfg.Plan.AllReduce.PerStep, join(cfg.batch()))
	if cfg.dispatches() {
		fmt.Fprintf(&b, " --a2a-bytes-per-token %d --tokens %s", cfg.Plan.AllToAll.BytesPerToken, join(cfg.Tokens))
	}
	if cfg.Repeats > 0 {
		fmt.Fprintf(&b, " --repeats %d", cfg.Repeats)
	}
	if cfg.Iters > 0 {
		fmt.Fprintf(&b, " --iters %d", cfg.Iters)
	}
	if cfg.NoGraph {
		b.WriteString(" --no-graph")
	}
	return b.String()
}

// Run uploads and runs the script and emits KindNCCLEnv, KindNCCLBurst per
// M, KindNCCLAllToAll per T, KindNCCLCliff once the latency cliff shows,
// KindNCCLWarning for each figure left out (and why), KindNCCLProgress
// while running and KindNCCLError on failures (results
// before a failure are already emitted). Busy GPUs give a *pyrun.BusyError
// before anything runs, unless cfg.Force.
func Run(ctx context.Context, cfg Config, em *phases.Emitter) error {
	p := cfg.Plan
	params := map[string]any{"model": p.Model, "tp": p.TP, "nproc": cfg.NProc, "torchrun": cfg.Torchrun, "batch": p.Batch,
		"allreduce_per_step": p.AllReduce.PerStep, "force": cfg.Force, "ep": p.EP}
	if len(cfg.Nodes) > 1 {
		names := make([]string, len(cfg.Nodes))
		for i, h := range cfg.Nodes {
			names[i] = h.Name()
		}
		params["nodes"], params["master_addr"], params["master_port"] = names, cfg.MasterAddr, cfg.MasterPort
	}
	if len(cfg.Env) > 0 {
		params["env"] = slices.Sorted(maps.Keys(cfg.Env)) // names only: values are never journalled
	}
	return phases.Run(ctx, em, phases.NCCL, params, func(ctx context.Context) error { return run(ctx, cfg, em) })
}

func run(ctx context.Context, cfg Config, em *phases.Emitter) error {
	if err := cfg.Validate(); err != nil {
		return &phases.InputError{Err: fmt.Errorf("nccl: %w", err)}
	}
	if none, ok := NoCollectives(cfg); ok {
		em.Emit(ctx, phases.KindNCCLNone, none)
		return nil
	}
	if !cfg.Force {
		if err := pyrun.Busy(ctx, cfg.Host); err != nil {
			return err
		}
	}
	if l, ok := gputel.LinkPeak(ctx, cfg.Host); ok {
		em.Emit(ctx, phases.KindNCCLLink, &l)
	}
	script, err := pyrun.Upload(ctx, cfg.Host, cfg.WorkDir, "nccl", Script, ".py")
	if err != nil {
		return err
	}
	cmd := Command(cfg, script)
	wait := func() error { return nil }
	if len(cfg.Nodes) > 1 {
		if err := checkNodes(cfg); err != nil {
			return err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		if wait, err = startWorkers(ctx, cfg, cancel); err != nil {
			return err
		}
		cmd = NodeCommand(cfg, script, 0)
	}
	var a2a []phases.NCCLAllToAll
	cliff := false
	err = lines.Stream(ctx, pyrun.Spec{
		Host:       cfg.Host,
		Cmd:        cmd,
		KillPrefix: pyrun.ExecPrefix(strings.ReplaceAll(" "+cfg.Torchrun+" ", " -i ", " "), cfg.python()),
		KillParent: true,
		OnText:     cfg.OnText,
	}, em, cfg.OnRaw, func(_ string, data any) {
		if r, ok := data.(*phases.NCCLAllToAll); ok {
			a2a = append(a2a, *r)
			if c, found := FindCliff(a2a); found && !cliff {
				cliff = true
				em.Emit(ctx, phases.KindNCCLCliff, c)
			}
		}
	})
	if werr := wait(); werr != nil && err == nil {
		err = werr
	}
	return err
}

// NoCollectives says when there is nothing to time: one process on one
// node (NCCL moves no data between one rank and itself), or a plan whose
// step does no collective at its TP.
func NoCollectives(cfg Config) (phases.NCCLNone, bool) {
	tp, n := cfg.Plan.TP, max(cfg.NProc, 1)
	switch {
	case n == 1 && len(cfg.Nodes) <= 1 && tp <= 1:
		return phases.NCCLNone{TP: tp, NProc: n, Reason: fmt.Sprintf(
			"one process on one GPU (TP %d): a decode step there has no all-reduce or all-to-all, so there is nothing for NCCL to time and communication is 0 ms per step", max(tp, 1))}, true
	case cfg.Plan.AllReduce.PerStep == 0 && cfg.Plan.AllToAll == nil:
		return phases.NCCLNone{TP: tp, NProc: n, Reason: fmt.Sprintf(
			"at TP %d the model's decode step does no collective: communication is 0 ms per step", tp)}, true
	}
	return phases.NCCLNone{}, false
}

// FindCliff names the first tokens-per-GPU size whose All-to-All latency is
// more than twice the previous size's (rows in the order run, T ascending).
func FindCliff(rows []phases.NCCLAllToAll) (phases.NCCLCliff, bool) {
	for i := 1; i < len(rows); i++ {
		prev, cur := rows[i-1], rows[i]
		if prev.Us > 0 && cur.Us > 2*prev.Us && cur.Tokens > prev.Tokens {
			return phases.NCCLCliff{Tokens: cur.Tokens, FromUs: prev.Us, ToUs: cur.Us}, true
		}
	}
	return phases.NCCLCliff{}, false
}

// lines maps the script's lines to the phase's events.
var lines = pyrun.Events{What: "nccl script", ErrorKind: phases.KindNCCLError, Types: map[string]pyrun.Kind{
	"env":      pyrun.As[phases.GPUEnv](phases.KindNCCLEnv),
	"progress": pyrun.As[phases.Progress](phases.KindNCCLProgress),
	"burst":    pyrun.As[phases.NCCLBurst](phases.KindNCCLBurst),
	"alltoall": pyrun.As[phases.NCCLAllToAll](phases.KindNCCLAllToAll),
	"warning":  pyrun.As[phases.NCCLWarning](phases.KindNCCLWarning),
	"error":    pyrun.As[phases.ScriptError](phases.KindNCCLError),
}}

// LineEvent maps one line of the script's output to the event kind and
// payload it becomes; ok is false for lines that carry no result (start,
// done, unknown types, fields that do not decode).
func LineEvent(l pyrun.Line) (kind string, data any, ok bool) { return lines.Event(l) }

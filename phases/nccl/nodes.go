package nccl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
)

// NodeCommand is node rank's torchrun command line on a deployment of
// len(cfg.Nodes) nodes: --nnodes/--node-rank/--master-addr/--master-port in
// place of --standalone, cfg.Env set for it (inside the container when the
// launcher is `docker exec`).
func NodeCommand(cfg Config, scriptPath string, rank int) string {
	tr, py := launcher(cfg)
	var b strings.Builder
	fmt.Fprintf(&b, "%s --nnodes %d --node-rank %d --master-addr %s --master-port %d --nproc-per-node %d --no-python %s -c \"$(cat %s)\"",
		tr, len(cfg.Nodes), rank, remote.Quote(cfg.MasterAddr), cfg.MasterPort, max(cfg.NProc, 1), py, remote.Quote(scriptPath))
	b.WriteString(scriptArgs(cfg))
	return b.String()
}

// withEnv puts env before the launcher: `env K=V torchrun`, or `docker exec
// -e K=V …` so that it reaches the ranks inside the container.
func withEnv(launcher string, env map[string]string) string {
	if len(env) == 0 {
		return launcher
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, remote.Quote(k+"="+env[k]))
	}
	if rest, ok := strings.CutPrefix(launcher, "docker exec "); ok {
		return "docker exec -e " + strings.Join(kv, " -e ") + " " + rest
	}
	return "env " + strings.Join(kv, " ") + " " + launcher
}

// checkNodes refuses a multi-node run it cannot start.
func checkNodes(cfg Config) error {
	if cfg.MasterAddr == "" {
		return errors.New("nccl: several nodes but no master address (nccl.master_addr)")
	}
	for k := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			return fmt.Errorf("nccl: environment variable name %q is not valid", k)
		}
	}
	return nil
}

// startWorkers uploads the script to every node but the head, checks their
// GPUs are free (unless cfg.Force), and starts their torchrun in the
// background; wait returns the first worker's failure. Their output goes
// to cfg.OnText, each line prefixed with its node.
// A worker's failure cancels the run (fail), so rank 0 does not wait for
// a rendezvous that cannot happen.
func startWorkers(ctx context.Context, cfg Config, fail func()) (wait func() error, err error) {
	type prepared struct {
		host remote.Host
		cmd  string
	}
	var ws []prepared
	for i, h := range cfg.Nodes[1:] {
		if !cfg.Force {
			if err := pyrun.Busy(ctx, h); err != nil {
				return nil, fmt.Errorf("node %s: %w", h.Name(), err)
			}
		}
		script, err := pyrun.Upload(ctx, h, cfg.WorkDir, "nccl", Script, ".py")
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", h.Name(), err)
		}
		ws = append(ws, prepared{h, NodeCommand(cfg, script, i+1)})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := w.host.Name()
			err := w.host.Run(ctx, w.cmd, nil, func(l remote.Line) {
				if cfg.OnText != nil {
					l.Text = name + ": " + l.Text
					cfg.OnText(l)
				}
			})
			if err != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("node %s: torchrun: %w", name, err)
				fail()
			}
		}()
	}
	return func() error { wg.Wait(); return errors.Join(errs...) }, nil
}

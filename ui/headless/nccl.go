package headless

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/remote"
)

// ncclBinds are the nccl command's flags that set campaign keys.
var ncclBinds = gpuBinds("nccl", campaign.Flag{Name: "nproc", Key: "nccl.nproc"}, campaign.Flag{Name: "torchrun", Key: "nccl.torchrun"})

// ncclCmd is the nccl command: the GPU commands' flags and its own.
type ncclCmd struct {
	c       *Command
	g       *gpuFlags
	python  *string
	tokens  gpubench.IntList
	repeats *int
	noGraph *bool
}

// newNCCL is the nccl command with its flags.
func newNCCL(stdout, stderr io.Writer) *ncclCmd {
	c, g := newGPUCommand("nccl", "profdeck nccl [-c FILE] [--host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128]\n"+
		"       --nproc N [--torchrun CMD] [--dry-run] [--json FILE|-] [--jsonl FILE]", stdout, stderr)
	n := &ncclCmd{c: c, g: g}
	fs := c.Flags
	fs.Int("nproc", 0, "processes (GPUs) for torchrun per node; 0: the TP size over the nodes (default: the campaign's nccl.nproc)")
	fs.String("torchrun", "", `torchrun command prefix (default: the campaign's nccl.torchrun, else torchrun; e.g. "docker exec -i vllm torchrun")`)
	n.python = fs.String("python", "", "the Python torchrun starts for each rank (default: the last word of the campaign's micro.python, else python3)")
	fs.Var(&n.tokens, "tokens", "All-to-All tokens per GPU (default 1,2,4,…,256)")
	n.repeats = fs.Int("repeats", 0, "bursts timed per batch size (default: the script's, 10)")
	n.noGraph = fs.Bool("no-graph", false, "skip the CUDA-graph burst")
	g.allNodes = true
	return n
}

// plan is the campaign with the flags over it, the model to plan, and the
// phase's configuration but its hosts and plan.
func (n *ncclCmd) plan() (*campaign.Campaign, gpuSettings, nccl.Config, error) {
	c := n.c
	camp, set, err := n.g.plan(c, ncclBinds, func(k *campaign.Campaign) []int { return k.NCCL.Batch })
	if err == nil && c.Set("repeats") && *n.repeats < 1 {
		err = BadInput("--repeats: must be at least 1, got %d", *n.repeats)
	}
	if err == nil && c.Set("python") && strings.TrimSpace(*n.python) == "" {
		err = BadInput("--python: must name the Python each rank runs (e.g. python3)")
	}
	if err != nil {
		return nil, set, nccl.Config{}, err
	}
	cfg := camp.NCCLConfig()
	if c.Set("python") {
		cfg.Python = *n.python
	}
	cfg.Batch, cfg.WorkDir, cfg.Force = nil, n.g.workDir, n.g.force // the plan's batch sizes: the campaign's or --batch
	if c.Set("tokens") {
		cfg.Tokens = n.tokens
	}
	cfg.Repeats, cfg.NoGraph = *n.repeats, *n.noGraph
	cfg.OnText = func(l remote.Line) { fmt.Fprintln(c.Stderr, "  |", l.Text) }
	return camp, set, cfg, nil
}

// NCCLMain is `profdeck nccl`: the decode step's collectives timed on the
// host under torchrun.
func NCCLMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	n := newNCCL(stdout, stderr)
	c := n.c
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	camp, set, cfg, err := n.plan()
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, n.g.run(ctx, c, camp, set,
		func(h remote.Host, plan model.Plan) gpuPhase {
			cfg.Host, cfg.Plan = h, plan
			if len(n.g.others) > 0 {
				cfg.Nodes = append([]remote.Host{h}, n.g.others...)
			}
			rep := nccl.Report{Host: h.Name(), Torchrun: cfg.Torchrun, NProc: cfg.NProc, Plan: plan}
			return gpuPhase{Result: &rep.Result, ErrorText: nccl.ErrorText,
				Run: func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error {
					cfg.OnRaw = onRaw
					return nccl.Run(ctx, cfg, em)
				},
				Report: func(errText string) any { rep.Error = errText; return rep },
			}
		}))
}

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

// NCCLMain is `profdeck nccl`: the decode step's collectives timed on the
// host under torchrun.
func NCCLMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, g := newGPUCommand("nccl", "profdeck nccl [-c FILE] [--host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128]\n"+
		"       --nproc N [--torchrun CMD] [--dry-run] [--json FILE|-] [--jsonl FILE]", stdout, stderr)
	fs := c.Flags
	fs.Int("nproc", 0, "processes (GPUs) for torchrun per node (default: the campaign's nccl.nproc; 0: the TP size over the nodes)")
	fs.String("torchrun", "", `torchrun command prefix (default: the campaign's nccl.torchrun, else torchrun; e.g. "docker exec -i vllm torchrun")`)
	python := fs.String("python", "", "the Python torchrun starts for each rank (default: the last word of the campaign's micro.python, else python3)")
	var tokens gpubench.IntList
	fs.Var(&tokens, "tokens", "All-to-All tokens per GPU (default 1,2,4,…,256)")
	repeats := fs.Int("repeats", 0, "bursts timed per batch size (default: the script's, 10)")
	noGraph := fs.Bool("no-graph", false, "skip the CUDA-graph burst")
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	g.allNodes = true
	camp, set, err := g.plan(c, ncclBinds, func(k *campaign.Campaign) []int { return k.NCCL.Batch })
	if err == nil && c.Set("repeats") && *repeats < 1 {
		err = BadInput("--repeats: must be at least 1, got %d", *repeats)
	}
	if err == nil && c.Set("python") && strings.TrimSpace(*python) == "" {
		err = BadInput("--python: must name the Python each rank runs (e.g. python3)")
	}
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, g.run(ctx, c, camp, set,
		func(h remote.Host, plan model.Plan) gpuPhase {
			cfg := camp.NCCLConfig()
			if c.Set("python") {
				cfg.Python = *python
			}
			cfg.Host, cfg.Plan, cfg.Batch, cfg.Tokens, cfg.WorkDir, cfg.Force = h, plan, nil, tokens, g.workDir, g.force
			cfg.Repeats, cfg.NoGraph = *repeats, *noGraph
			if len(g.others) > 0 {
				cfg.Nodes = append([]remote.Host{h}, g.others...)
			}
			cfg.OnText = func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }
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

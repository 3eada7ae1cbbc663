package headless

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

// microBinds are the micro command's flags that set campaign keys.
var microBinds = gpuBinds("micro", campaign.Flag{Name: "python", Key: "micro.python"})

// positive refuses a flag given whose value is not a finite number above 0
// (a flag not given leaves the script's default).
func positive(c *Command, flags map[string]float64) error {
	for name, v := range flags {
		if c.Set(name) && (!(v > 0) || math.IsInf(v, 0)) {
			return BadInput("--%s: must be more than 0, got %g", name, v)
		}
	}
	return nil
}

// MicroMain is `profdeck micro`: the decode step's GEMMs timed on the host.
func MicroMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, g := newGPUCommand("micro", "profdeck micro [-c FILE] [--host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128]\n"+
		"       [--python CMD] [--dry-run] [--json FILE|-] [--jsonl FILE]", stdout, stderr)
	fs := c.Flags
	fs.String("python", "", `command prefix that runs Python on the host (default: the campaign's micro.python, else python3; e.g. "docker exec -i vllm python3")`)
	warm := fs.Float64("warmup-ms", 0, "warm-up per GEMM in ms (default: the script's, 10)")
	repMs := fs.Float64("rep-ms", 0, "timed repetitions per GEMM in ms (default: the script's, 40)")
	noCalib := fs.Bool("no-calib", false, "skip the 8192³ GEMM check against triton's do_bench")
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	camp, set, err := g.plan(c, microBinds, func(k *campaign.Campaign) []int { return k.Micro.Batch })
	if err == nil {
		err = positive(c, map[string]float64{"warmup-ms": *warm, "rep-ms": *repMs})
	}
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, g.run(ctx, c, camp, set,
		func(h remote.Host, plan model.Plan) gpuPhase {
			cfg := camp.MicroConfig()
			cfg.Host, cfg.Plan, cfg.WorkDir, cfg.Force = h, plan, g.workDir, g.force
			cfg.WarmupMs, cfg.RepMs, cfg.NoCalib = *warm, *repMs, *noCalib
			cfg.OnText = func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }
			rep := micro.Report{Host: h.Name(), Python: cfg.Python, Plan: plan}
			return gpuPhase{Result: &rep.Result, ErrorText: micro.ErrorText,
				Run: func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error {
					cfg.OnRaw = onRaw
					return micro.Run(ctx, cfg, em)
				},
				Report: func(errText string) any { rep.Error = errText; return rep },
			}
		}))
}

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

// microCmd is the micro command: the GPU commands' flags and its own.
type microCmd struct {
	c         *Command
	g         *gpuFlags
	warm, rep *float64
	noCalib   *bool
}

// newMicro is the micro command with its flags.
func newMicro(stdout, stderr io.Writer) *microCmd {
	c, g := newGPUCommand("micro", "profdeck micro [-c FILE] [--host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128]\n"+
		"       [--python CMD] [--dry-run] [--json FILE|-] [--jsonl FILE]", stdout, stderr)
	m := &microCmd{c: c, g: g}
	fs := c.Flags
	fs.String("python", "", `command prefix that runs Python on the host (default: the campaign's micro.python, else python3; e.g. "docker exec -i vllm python3")`)
	m.warm = fs.Float64("warmup-ms", 0, "warm-up per GEMM in ms (default: the script's, 10)")
	m.rep = fs.Float64("rep-ms", 0, "timed repetitions per GEMM in ms (default: the script's, 40)")
	m.noCalib = fs.Bool("no-calib", false, "skip the 8192³ GEMM check against triton's do_bench")
	return m
}

// plan is the campaign with the flags over it, the model to plan, and the
// phase's configuration but its host and plan.
func (m *microCmd) plan() (*campaign.Campaign, gpuSettings, micro.Config, error) {
	camp, set, err := m.g.plan(m.c, microBinds, func(k *campaign.Campaign) []int { return k.Micro.Batch })
	if err == nil {
		err = positive(m.c, map[string]float64{"warmup-ms": *m.warm, "rep-ms": *m.rep})
	}
	if err != nil {
		return nil, set, micro.Config{}, err
	}
	cfg := camp.MicroConfig()
	cfg.WorkDir, cfg.Force = m.g.workDir, m.g.force
	cfg.WarmupMs, cfg.RepMs, cfg.NoCalib = *m.warm, *m.rep, *m.noCalib
	cfg.OnText = func(l remote.Line) { fmt.Fprintln(m.c.Stderr, "  |", l.Text) }
	return camp, set, cfg, nil
}

// MicroMain is `profdeck micro`: the decode step's GEMMs timed on the host.
func MicroMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := newMicro(stdout, stderr)
	c := m.c
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	camp, set, cfg, err := m.plan()
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, m.g.run(ctx, c, camp, set,
		func(h remote.Host, plan model.Plan) gpuPhase {
			cfg.Host, cfg.Plan = h, plan
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

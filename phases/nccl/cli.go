// Package nccl is the NCCL phase: a decode step's collectives timed on the
// GPU host under torchrun, one process per GPU (nccl.py): the step's burst of
// all-reduces per batch size, and the expert-parallel All-to-All by tokens
// per GPU with its latency cliff.
package nccl

import (
	"context"
	"fmt"
	"io"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/report/campaign"
)

// Report is what `profdeck nccl --json` writes.
type Report struct {
	Host     string     `json:"host"`
	Torchrun string     `json:"torchrun"`
	NProc    int        `json:"nproc"`
	Plan     model.Plan `json:"plan"`
	Result
	Error string `json:"error,omitempty"`
}

// Main is `profdeck nccl`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c gpubench.Common
	fs := c.FlagSet("nccl", "usage: profdeck nccl [-c FILE | --host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128] --nproc N [--torchrun CMD] [--dry-run] [--json FILE|-]", stderr)
	nproc := fs.Int("nproc", 0, "processes (GPUs) for torchrun (default: the campaign's, else 8)")
	torchrun := fs.String("torchrun", "", `torchrun command prefix (default: the campaign's, else torchrun; e.g. "docker exec -i vllm torchrun")`)
	python := fs.String("python", "python3", "the Python torchrun starts for each rank")
	var tokens gpubench.IntList
	fs.Var(&tokens, "tokens", "All-to-All tokens per GPU (default 1,2,4,…,256)")
	repeats := fs.Int("repeats", 0, "bursts timed per batch size (default 10)")
	noGraph := fs.Bool("no-graph", false, "skip the CUDA-graph burst")
	res, ok := c.Parse(fs, args, func(k *campaign.Campaign) []int { return k.NCCL.Batch }, stderr)
	if !ok {
		return 2
	}
	if *torchrun == "" {
		*torchrun = res.Campaign.NCCL.Torchrun
	}
	if *nproc == 0 {
		*nproc = res.Campaign.NCCL.NProc
	}
	if *nproc < 1 {
		*nproc = 8
	}
	h, plan, code, ok := c.Prepare(ctx, res, stdout, stderr)
	if !ok {
		return code
	}
	defer h.Close()
	rep := Report{Host: h.Name(), Torchrun: *torchrun, NProc: *nproc, Plan: plan}
	return c.Run(ctx, gpubench.Phase{Result: &rep.Result, ErrorText: ErrorText,
		Run: func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error {
			return Run(ctx, Config{Host: h, Torchrun: *torchrun, Python: *python, NProc: *nproc, Plan: plan, Tokens: tokens,
				WorkDir: c.WorkDir, Force: c.Force, Repeats: *repeats, NoGraph: *noGraph,
				OnText: func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }, OnRaw: onRaw}, em)
		},
		Report: func(errText string) any { rep.Error = errText; return rep },
	}, stdout, stderr)
}

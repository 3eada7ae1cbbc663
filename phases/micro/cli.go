// Package micro is the micro phase: the model's decode-step GEMMs timed on
// the GPU host, each at its exact shape, with a PyTorch script (micro.py)
// that profdeck uploads and runs with the host's Python.
package micro

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

// Report is what `profdeck micro --json` writes.
type Report struct {
	Host   string     `json:"host"`
	Python string     `json:"python"`
	Plan   model.Plan `json:"plan"`
	Result
	Error string `json:"error,omitempty"`
}

// Main is `profdeck micro`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c gpubench.Common
	fs := c.FlagSet("micro", "usage: profdeck micro [-c FILE | --host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128] [--python CMD] [--dry-run] [--json FILE|-]", stderr)
	python := fs.String("python", "", `command prefix that runs Python on the host (default: the campaign's, else python3; e.g. "docker exec -i vllm python3")`)
	warm := fs.Float64("warmup-ms", 0, "warm-up per GEMM in ms (default 10)")
	repMs := fs.Float64("rep-ms", 0, "timed repetitions per GEMM in ms (default 40)")
	noCalib := fs.Bool("no-calib", false, "skip the 8192³ GEMM check against triton's do_bench")
	res, ok := c.Parse(fs, args, func(k *campaign.Campaign) []int { return k.Micro.Batch }, stderr)
	if !ok {
		return 2
	}
	if *python == "" {
		*python = res.Campaign.Micro.Python
	}

	h, plan, code, ok := c.Prepare(ctx, res, stdout, stderr)
	if !ok {
		return code
	}
	defer h.Close()
	rep := Report{Host: h.Name(), Python: *python, Plan: plan}
	return c.Run(ctx, gpubench.Phase{Result: &rep.Result, ErrorText: ErrorText,
		Run: func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error {
			return Run(ctx, Config{Host: h, Python: *python, Plan: plan, WorkDir: c.WorkDir, Force: c.Force,
				WarmupMs: *warm, RepMs: *repMs, NoCalib: *noCalib,
				OnText: func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }, OnRaw: onRaw}, em)
		},
		Report: func(errText string) any { rep.Error = errText; return rep },
	}, stdout, stderr)
}

// Package nccl is the NCCL phase: a decode step's collectives timed on the
// GPU host under torchrun, one process per GPU (nccl.py): the step's burst of
// all-reduces per batch size, and the expert-parallel All-to-All by tokens
// per GPU with its latency cliff.
package nccl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro/gpuflags"
	"github.com/profdeck/profdeck/phases/micro/pyrun"
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
	fs := flag.NewFlagSet("nccl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c gpuflags.Common
	c.Register(fs)
	nproc := fs.Int("nproc", 0, "processes (GPUs) for torchrun (default: the campaign's, else 8)")
	torchrun := fs.String("torchrun", "", `torchrun command prefix (default: the campaign's, else torchrun; e.g. "docker exec -i vllm torchrun")`)
	python := fs.String("python", "python3", "the Python torchrun starts for each rank")
	var tokens gpuflags.IntList
	fs.Var(&tokens, "tokens", "All-to-All tokens per GPU (default 1,2,4,…,256)")
	repeats := fs.Int("repeats", 0, "bursts timed per batch size (default 10)")
	noGraph := fs.Bool("no-graph", false, "skip the CUDA-graph burst")
	rawPath := fs.String("lines", "", "also write the script's raw JSON lines to FILE")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck nccl [-c FILE | --host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128] --nproc N [--torchrun CMD] [--dry-run] [--json FILE|-]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck nccl: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	res, err := c.Resolve(func(k *campaign.Campaign) []int { return k.NCCL.Batch })
	if err != nil {
		fmt.Fprintln(stderr, "profdeck nccl:", err)
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
	var h remote.Host
	if !c.DryRun || needsHost(c.Model) {
		if h, err = res.OpenHost(ctx); err != nil {
			fmt.Fprintln(stderr, "profdeck nccl:", err)
			return 1
		}
		defer h.Close()
	}
	plan, err := c.Plan(ctx, h)
	if err != nil {
		fmt.Fprintln(stderr, "profdeck nccl:", err)
		return 2
	}
	cfg := Config{Host: h, Torchrun: *torchrun, Python: *python, NProc: *nproc, Plan: plan, Tokens: tokens,
		WorkDir: c.WorkDir, Force: c.Force, Repeats: *repeats, NoGraph: *noGraph,
		OnText: func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }}
	if c.DryRun {
		out := c.JSON
		if out == "" {
			out = "-"
		}
		if err := gpuflags.WriteJSON(out, stdout, plan); err != nil {
			fmt.Fprintln(stderr, "profdeck nccl:", err)
			return 1
		}
		return 0
	}
	if remote.IsSimulated(h) {
		fmt.Fprintln(stderr, "profdeck nccl: SIMULATED host: the timings are modelled, not measured")
	}
	rep := Report{Host: h.Name(), Torchrun: *torchrun, NProc: *nproc, Plan: plan}
	var raw *os.File
	if *rawPath != "" {
		if raw, err = os.Create(*rawPath); err != nil {
			fmt.Fprintln(stderr, "--lines:", err)
			return 1
		}
		defer raw.Close()
	}
	if raw != nil {
		cfg.OnRaw = func(s string) { fmt.Fprintln(raw, s) }
	}
	ch := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range ch {
			rep.Result.Add(ev)
			switch d := ev.Data.(type) {
			case phases.Progress:
				fmt.Fprintf(stderr, "[%d/%d] %s\n", d.Done, d.Total, d.Text)
			case phases.ScriptError:
				fmt.Fprintln(stderr, "error:", errorText(d))
			}
		}
	}()
	runErr := Run(ctx, cfg, &phases.Emitter{Out: ch})
	close(ch)
	wg.Wait()
	code := 0
	if runErr != nil {
		rep.Error = runErr.Error()
		var busy *pyrun.BusyError
		switch {
		case errors.As(runErr, &busy):
			fmt.Fprintln(stderr, "profdeck nccl:", runErr)
			return 3
		case ctx.Err() != nil:
			code = 130
		default:
			code = 1
		}
		fmt.Fprintln(stderr, "profdeck nccl:", runErr)
	}
	if c.JSON != "-" {
		rep.Result.WriteTables(stdout)
	}
	if c.JSON != "" {
		if err := gpuflags.WriteJSON(c.JSON, stdout, rep); err != nil {
			fmt.Fprintln(stderr, "profdeck nccl:", err)
			return 1
		}
	}
	return code
}

func needsHost(spec string) bool {
	if _, ok := model.Preset(spec); ok {
		return false
	}
	_, err := os.Stat(spec)
	return err != nil
}

// Package micro is the micro phase: the model's decode-step GEMMs timed on
// the GPU host, each at its exact shape, with a PyTorch script (micro.py)
// that profdeck uploads and runs with the host's Python.
package micro

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
	fs := flag.NewFlagSet("micro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c gpuflags.Common
	c.Register(fs)
	python := fs.String("python", "", `command prefix that runs Python on the host (default: the campaign's, else python3; e.g. "docker exec -i vllm python3")`)
	warm := fs.Float64("warmup-ms", 0, "warm-up per GEMM in ms (default 10)")
	rep := fs.Float64("rep-ms", 0, "timed repetitions per GEMM in ms (default 40)")
	noCalib := fs.Bool("no-calib", false, "skip the 8192³ GEMM check against triton's do_bench")
	rawPath := fs.String("lines", "", "also write the script's raw JSON lines to FILE")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck micro [-c FILE | --host HOST] --model-config FILE|PRESET --tp N [--ep] [--batch 1,8,64,128] [--python CMD] [--dry-run] [--json FILE|-]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck micro: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	res, err := c.Resolve(func(k *campaign.Campaign) []int { return k.Micro.Batch })
	if err != nil {
		fmt.Fprintln(stderr, "profdeck micro:", err)
		return 2
	}
	if *python == "" {
		*python = res.Campaign.Micro.Python
	}

	var h remote.Host
	if !c.DryRun || needsHost(c.Model) {
		if h, err = res.OpenHost(ctx); err != nil {
			fmt.Fprintln(stderr, "profdeck micro:", err)
			return 1
		}
		defer h.Close()
	}
	plan, err := c.Plan(ctx, h)
	if err != nil {
		fmt.Fprintln(stderr, "profdeck micro:", err)
		return 2
	}
	if c.DryRun {
		out := c.JSON
		if out == "" {
			out = "-"
		}
		if err := gpuflags.WriteJSON(out, stdout, plan); err != nil {
			fmt.Fprintln(stderr, "profdeck micro:", err)
			return 1
		}
		return 0
	}
	if remote.IsSimulated(h) {
		fmt.Fprintln(stderr, "profdeck micro: SIMULATED host: the timings are modelled, not measured")
	}

	rep2 := Report{Host: h.Name(), Python: *python, Plan: plan}
	var raw *os.File
	if *rawPath != "" {
		if raw, err = os.Create(*rawPath); err != nil {
			fmt.Fprintln(stderr, "--lines:", err)
			return 1
		}
		defer raw.Close()
	}
	ch := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range ch {
			rep2.Result.Add(ev)
			switch d := ev.Data.(type) {
			case phases.Progress:
				fmt.Fprintf(stderr, "[%d/%d] %s\n", d.Done, d.Total, d.Text)
			case phases.ScriptError:
				fmt.Fprintln(stderr, "error:", ErrorText(d))
			}
		}
	}()
	runErr := Run(ctx, Config{Host: h, Python: *python, Plan: plan, WorkDir: c.WorkDir, Force: c.Force,
		WarmupMs: *warm, RepMs: *rep, NoCalib: *noCalib,
		OnText: func(l remote.Line) { fmt.Fprintln(stderr, "  |", l.Text) }, OnRaw: rawWriter(raw)},
		&phases.Emitter{Out: ch})
	close(ch)
	wg.Wait()
	code := 0
	if runErr != nil {
		rep2.Error = runErr.Error()
		var busy *pyrun.BusyError
		switch {
		case errors.As(runErr, &busy):
			fmt.Fprintln(stderr, "profdeck micro:", runErr)
			return 3
		case ctx.Err() != nil:
			code = 130
		default:
			code = 1
		}
		fmt.Fprintln(stderr, "profdeck micro:", runErr)
	}
	if c.JSON != "-" {
		rep2.Result.WriteTables(stdout)
	}
	if c.JSON != "" {
		if err := gpuflags.WriteJSON(c.JSON, stdout, rep2); err != nil {
			fmt.Fprintln(stderr, "profdeck micro:", err)
			return 1
		}
	}
	return code
}

// needsHost reports whether the model spec names a file that must be read on
// the host (not a preset, not a local file).
func needsHost(spec string) bool {
	if _, ok := model.Preset(spec); ok {
		return false
	}
	_, err := os.Stat(spec)
	return err != nil
}

// rawWriter returns a callback that appends lines to f (nil when f is nil).
func rawWriter(f *os.File) func(string) {
	if f == nil {
		return nil
	}
	return func(s string) { fmt.Fprintln(f, s) }
}

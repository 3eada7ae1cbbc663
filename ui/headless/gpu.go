package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gpubench"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
)

// gpuFlags are the flags the micro and nccl commands share beyond the
// common ones: the model and its parallelism, the batch sizes, the work
// dir on the host.
type gpuFlags struct {
	model   string
	tp      int
	ep      bool
	batch   gpubench.IntList
	workDir string
	force   bool
	noEmbed bool
	dryRun  bool
	// allNodes opens every node of the campaign (NCCL across nodes); the
	// nodes past the head land in others.
	allNodes bool
	others   []remote.Host
}

// newGPUCommand is a GPU benchmark command with the shared flags.
func newGPUCommand(name, usage string, stdout, stderr io.Writer) (*Command, *gpuFlags) {
	c := New(name, usage, stdout, stderr)
	g := &gpuFlags{}
	fs := c.Flags
	fs.StringVar(&g.model, "model-config", "", "model: a preset ("+strings.Join(model.PresetNames(), ", ")+") or a config.json (local, or a path on the host)")
	fs.IntVar(&g.tp, "tp", 0, "tensor-parallel size (default: the campaign's, else 8)")
	fs.BoolVar(&g.ep, "ep", false, "expert parallelism (vLLM --enable-expert-parallel)")
	fs.Var(&g.batch, "batch", "batch sizes M, comma-separated (default 1,8,64,128)")
	fs.StringVar(&g.workDir, "workdir", "/tmp/profdeck", "work dir on the host for the uploaded script")
	fs.BoolVar(&g.force, "force", false, "run even when nvidia-smi shows the GPUs busy")
	fs.BoolVar(&g.noEmbed, "no-embed-allreduce", false, "the server does no all-reduce for the input embedding")
	fs.BoolVar(&g.dryRun, "dry-run", false, "print the decode-step plan as JSON and exit (no GPU needed)")
	return c, g
}

// run is a GPU command's work: the campaign (batch picks the phase's batch
// sizes from it), the flags resolved with it, the host and the plan, then
// the phase that phase builds from them.
func (g *gpuFlags) run(ctx context.Context, c *Command, batch func(*campaign.Campaign) []int,
	phase func(camp *campaign.Campaign, h remote.Host, plan model.Plan) gpuPhase) error {
	camp, fromFile, err := c.Campaign()
	if err != nil {
		return err
	}
	if err := g.resolve(camp, fromFile, batch(camp)); err != nil {
		return err
	}
	h, plan, err := g.prepare(ctx, c, camp)
	if err != nil || h == nil {
		return err
	}
	defer h.Close()
	defer hosts.CloseAll(g.others)
	return runGPU(ctx, c, phase(camp, h, plan))
}

// resolve fills the flags left unset from the campaign (fromFile: one was
// read); batch is the phase's section of it.
func (g *gpuFlags) resolve(camp *campaign.Campaign, fromFile bool, batch []int) error {
	if g.model == "" && fromFile {
		g.model, _ = camp.ModelSpec()
	}
	if g.tp == 0 {
		g.tp = camp.TP()
	}
	g.ep = g.ep || camp.Model.EP
	if len(g.batch) == 0 {
		g.batch = batch
	}
	if len(g.batch) == 0 {
		g.batch = model.DefaultBatch
	}
	if g.model == "" {
		return BadInput("no model: give --model-config PRESET|FILE (presets: %s)", strings.Join(model.PresetNames(), ", "))
	}
	return nil
}

// prepare opens the host (a dry run opens it only when the model config
// must be read there) and builds the plan. A dry run writes the plan and is
// over (h is nil). A model that does not build a plan is bad input.
func (g *gpuFlags) prepare(ctx context.Context, c *Command, camp *campaign.Campaign) (h remote.Host, plan model.Plan, err error) {
	if !g.dryRun || needsHost(g.model) {
		if !g.allNodes {
			if h, err = c.OpenHost(ctx, camp, nil); err != nil {
				return nil, plan, err
			}
		} else {
			nodes, err := c.OpenNodes(ctx, camp, nil)
			if err != nil {
				return nil, plan, err
			}
			h, g.others = nodes[0], nodes[1:]
		}
	}
	plan, err = gpubench.Plan(ctx, h, g.model, model.Options{TP: g.tp, EP: g.ep, Batch: g.batch, NoEmbeddingAllReduce: g.noEmbed})
	if err == nil && g.dryRun {
		if c.JSONPath == "" {
			c.JSONPath = "-"
		}
		err = c.WriteJSON(plan)
	} else if err != nil {
		err = &BadInputError{Err: err}
	}
	if (err != nil || g.dryRun) && h != nil {
		h.Close()
		hosts.CloseAll(g.others)
		h, g.others = nil, nil
	}
	return h, plan, err
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

// results gathers a phase's events and prints them as tables.
type results interface {
	Add(phases.Event)
	WriteTables(io.Writer)
}

// gpuPhase is one headless run of a GPU phase.
type gpuPhase struct {
	Result    results // folds the events in; its tables go to stdout
	ErrorText func(phases.ScriptError) string
	// Run runs the phase; onRaw is nil when no --jsonl file is asked for.
	Run func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error
	// Report is what --json writes, given the run's error text ("" when it
	// went well).
	Report func(errText string) any
}

// runGPU runs the phase: progress and script errors go to stderr as they
// come, the script's JSON lines to --jsonl, then the tables to stdout
// (unless JSON goes there) and the report to --json, also after a failure.
// Busy GPUs are a refused step (exit 3): nothing ran and nothing is written.
func runGPU(ctx context.Context, c *Command, p gpuPhase) error {
	var onRaw func(string)
	if w := c.JSONL(); w != nil {
		onRaw = func(s string) { fmt.Fprintln(w, s) }
	}
	ch := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range ch {
			p.Result.Add(ev)
			switch d := ev.Data.(type) {
			case phases.Progress:
				fmt.Fprintf(c.Stderr, "[%d/%d] %s\n", d.Done, d.Total, d.Text)
			case phases.ScriptError:
				fmt.Fprintln(c.Stderr, "error:", p.ErrorText(d))
			}
		}
	})
	runErr := p.Run(ctx, &phases.Emitter{Out: ch}, onRaw)
	close(ch)
	wg.Wait()
	var busy *pyrun.BusyError
	if errors.As(runErr, &busy) {
		return &StepFailedError{Err: runErr}
	}
	errText := ""
	if runErr != nil {
		errText = runErr.Error()
	}
	p.Result.WriteTables(c.Human())
	if c.JSONPath == "" {
		return runErr
	}
	if err := c.WriteJSON(p.Report(errText)); err != nil {
		if runErr != nil {
			fmt.Fprintf(c.Stderr, "profdeck %s: %v\n", c.Name, err)
			return runErr
		}
		return err
	}
	return runErr
}

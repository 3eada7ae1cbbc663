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
	// The flags bound to campaign keys (gpuBinds) are read from the flag
	// set; their defaults are the campaign's.
	fs.String("model-config", "", "model: a preset ("+strings.Join(model.PresetNames(), ", ")+") or a config.json (local, or a path on the host) (default: the campaign's model.config, model.preset or model.name)")
	fs.Int("tp", 0, "tensor-parallel size (default: the campaign's model.tp, else 8)")
	fs.Bool("ep", false, "expert parallelism (vLLM --enable-expert-parallel) (default: the campaign's model.ep)")
	fs.String("batch", "", "batch sizes M, comma-separated (default: the campaign's, else 1,8,64,128)")
	fs.StringVar(&g.workDir, "workdir", campaign.DefaultWorkDir, "work dir on the host for the uploaded script")
	fs.BoolVar(&g.force, "force", false, "run even when nvidia-smi shows the GPUs busy")
	fs.BoolVar(&g.noEmbed, "no-embed-allreduce", false, "the server does no all-reduce for the input embedding")
	fs.BoolVar(&g.dryRun, "dry-run", false, "print the decode-step plan as JSON and exit (no GPU needed)")
	c.flagProgress()
	return c, g
}

// gpuBinds are the flags of the GPU commands that set campaign keys;
// section is the command's (micro or nccl), whose batch sizes --batch sets.
func gpuBinds(section string, own ...campaign.Flag) []campaign.Flag {
	return append([]campaign.Flag{{Name: "model-config", Key: "model.config"}, {Name: "tp", Key: "model.tp"},
		{Name: "ep", Key: "model.ep"}, {Name: "batch", Key: section + ".batch"}}, own...)
}

// gpuSettings are what a GPU command resolved from the campaign and the
// flags: the model to plan and the plan's options.
type gpuSettings struct {
	spec string // a preset or a config.json
	opts model.Options
}

// plan reads the campaign with the command's flags over it; batch picks
// the phase's batch sizes from it.
func (g *gpuFlags) plan(c *Command, binds []campaign.Flag, batch func(*campaign.Campaign) []int) (*campaign.Campaign, gpuSettings, error) {
	camp, _, err := c.Campaign(binds...)
	if err != nil {
		return nil, gpuSettings{}, err
	}
	spec, err := camp.ModelSpec()
	if err != nil {
		return nil, gpuSettings{}, BadInput("no model: give --model-config PRESET|FILE (presets: %s), or -c FILE with model.preset or model.config", strings.Join(model.PresetNames(), ", "))
	}
	if strings.TrimSpace(g.workDir) == "" {
		return nil, gpuSettings{}, BadInput("--workdir: must name a directory on the host (e.g. %s)", campaign.DefaultWorkDir)
	}
	o := camp.PlanOptions(batch(camp))
	o.NoEmbeddingAllReduce = g.noEmbed
	return camp, gpuSettings{spec: spec, opts: o}, nil
}

// run is a GPU command's work: the campaign and the flags resolved, the
// host and the plan, then the phase that phase builds from them.
func (g *gpuFlags) run(ctx context.Context, c *Command, camp *campaign.Campaign, set gpuSettings,
	phase func(h remote.Host, plan model.Plan) gpuPhase) error {
	h, plan, err := g.prepare(ctx, c, camp, set)
	if err != nil || h == nil {
		return err
	}
	defer h.Close()
	defer hosts.CloseAll(g.others)
	if err := c.keepResult(camp, "", c.Name); err != nil {
		return err
	}
	return runGPU(ctx, c, phase(h, plan))
}

// prepare opens the host (a dry run opens it only when the model config
// must be read there) and builds the plan. A dry run writes the plan and is
// over (h is nil). A model that does not build a plan is bad input.
func (g *gpuFlags) prepare(ctx context.Context, c *Command, camp *campaign.Campaign, set gpuSettings) (h remote.Host, plan model.Plan, err error) {
	if !g.dryRun || needsHost(set.spec) {
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
	plan, err = gpubench.Plan(ctx, h, set.spec, set.opts)
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
	Empty() bool
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

// launcherFlag names, per command, the flag and key of what runs its script.
var launcherFlag = map[string]string{"micro": "--python, micro.python", "nccl": "--torchrun, nccl.torchrun"}

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
	observe, stopProgress := c.startProgress(ctx)
	defer stopProgress()
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range ch {
			observe(ev)
			p.Result.Add(ev)
			switch d := ev.Data.(type) {
			case phases.Progress:
				fmt.Fprintf(c.Stderr, "[%d/%d] %s\n", d.Done, d.Total, d.Text)
			case phases.ScriptError:
				fmt.Fprintln(c.Stderr, "error:", p.ErrorText(d))
			case phases.NCCLWarning:
				fmt.Fprintln(c.Stderr, "warning:", d.Text)
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
	if runErr == nil && p.Result.Empty() {
		runErr = fmt.Errorf("the script ended without an error but gave no result: check the command that runs it (%s)", launcherFlag[c.Name])
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
	c.sayKept()
	return runErr
}

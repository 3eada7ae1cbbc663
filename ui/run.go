// Package ui is the cockpit: a root bubbletea model that routes messages to
// one pane per phase and lays them out with a header and a status bar.
package ui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/cliflags"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// Version is shown in the journal; main sets it.
var Version = "dev"

// DemoMain runs the cockpit on the simulated deployment. The campaign runs
// by itself (every step, so every pane and the budget fill) unless --manual.
func DemoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, dir, manual, trace := newDemoFlags()
	if code, ok := parseFlags(fs, args, "profdeck demo [--dir DIR] [--manual] [--trace] [--engine vllm|sglang] [--load-time D] [--fail oom|nccl] [--stall-at GIB] ...", stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	c, err := demoCampaign(fs, *manual)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck demo: %v\n", err)
		return 2
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "profdeck-demo-")
		if err != nil {
			fmt.Fprintf(stderr, "profdeck demo: a temporary folder: %v\n", err)
			return 1
		}
		*dir = d
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "profdeck demo: --dir %s: %v\n", *dir, err)
		return 1
	}
	fmt.Fprintf(stderr, "profdeck demo: the notebook and journal go to %s\n", *dir)
	c.Notebook = campaign.Demo(*dir).Notebook
	if *trace {
		if err := demoTrace(c, *dir, stderr); err != nil {
			fmt.Fprintf(stderr, "profdeck demo: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := c.SimOptions()
	opts.AutoStart, opts.Emulator = *manual, vllmemu.Config{ServeBeforeReady: *manual}
	dep, err := sim.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck demo: simulated deployment: %v\n", err)
		return 1
	}
	auto := map[string]bool{phases.Notes: true}
	if *manual {
		auto = map[string]bool{phases.Macro: true}
	}
	code := runCockpit(ctx, c, dep, cockpitOptions{autoStart: auto}, stderr)
	// The full screen hid the line above; say it again where it stays.
	fmt.Fprintf(stderr, "profdeck demo: notebook %s (journal and files in %s)\n", c.Notebook, *dir)
	return code
}

// newDemoFlags is the demo's flag set, with the flags the demo reads
// itself; the others set its campaign's keys (demoBinds).
func newDemoFlags() (fs *flag.FlagSet, dir *string, manual, trace *bool) {
	fs = cliflags.New("demo")
	dir = fs.String("dir", "", "folder for the demo's notebook and journal (default: a new temporary folder)")
	manual = fs.Bool("manual", false, "drive the panes by hand instead of running the campaign (the sweep starts at once)")
	trace = fs.Bool("trace", false, "the sweep replays a small Mooncake trace (written to --dir) at 2× on its own schedule, instead of the concurrency levels")
	fs.Duration("load-time", 0, "how long the simulated 30-minute load takes (default 30s, 60s with --manual; more than 0)")
	fs.Float64("stall-at", 0, "simulate a load that stalls at this many GiB per GPU (e.g. 75.8)")
	fs.Float64("stall-with-profiler-at", 0, "simulate a restart with the profiler that stalls at this many GiB per GPU")
	fs.Duration("stall-after", 0, "call the load stalled after this long without progress (default: the demo's 10s)")
	fs.String("fail", "", "simulate a load that fails: oom or nccl")
	fs.String("engine", "", "the simulated server's engine: vllm (default) or sglang (SGLang's log and /metrics)")
	fs.Bool("variants", false, "compare three server variants after the baseline (--max-num-seqs 64 and 256, chunked prefill)")
	fs.String("concurrency", "", "the sweep's concurrency levels, comma separated (default 1,2,4,…,256)")
	fs.Duration("profiler-flush", 0, "how long the simulated stop_profile takes to flush its traces (default 3s; 0s for none)")
	return fs, dir, manual, trace
}

// demoTrace makes the demo's sweep a replay of the sample Mooncake trace,
// written to dir, at 2× its speed.
func demoTrace(c *campaign.Campaign, dir string, stderr io.Writer) error {
	p := filepath.Join(dir, "trace_mooncake.jsonl")
	if err := os.WriteFile(p, macro.SampleTrace, 0o644); err != nil {
		return fmt.Errorf("the sample trace: %v", err)
	}
	c.Macro.Dataset, c.Macro.DatasetFile, c.Macro.TraceSpeed = macro.TraceMooncake, p, 2
	fmt.Fprintf(stderr, "profdeck demo: the sweep replays the sample Mooncake trace %s at 2× on its own schedule\n", p)
	return c.Check()
}

// demoBinds are the demo's flags that set keys of its campaign.
var demoBinds = []campaign.Flag{
	{Name: "load-time", Key: "sim.load_time"}, {Name: "stall-at", Key: "sim.stall_at_gib"},
	{Name: "stall-with-profiler-at", Key: "sim.stall_with_profiler_at_gib"},
	{Name: "stall-after", Key: "load.stall_after"}, {Name: "fail", Key: "sim.fail"},
	{Name: "engine", Key: "server.engine"}, {Name: "concurrency", Key: "macro.concurrency"},
	{Name: "profiler-flush", Key: "sim.profiler_flush"},
}

// demoCampaign is the demo's campaign with the flags given over it: a
// whole load takes 30s (60s when driven by hand) unless --load-time says.
func demoCampaign(fs *flag.FlagSet, manual bool) (*campaign.Campaign, error) {
	c := campaign.Demo("")
	c.Sim.LoadTime.Duration = 30 * time.Second
	if manual {
		c.Sim.LoadTime.Duration = 60 * time.Second
	}
	if err := c.ApplyFlags(fs, demoBinds...); err != nil {
		return nil, err
	}
	if e := c.Server.Engine; e != "" && e != campaign.EngineVLLM && e != campaign.EngineSGLang {
		return nil, fmt.Errorf("--engine: must be vllm or sglang, got %q", e) // the simulated server is one of the two
	}
	if c.Server.Engine == campaign.EngineSGLang {
		c.Server.Launch = campaign.DemoSGLangLaunch
	}
	if f := fs.Lookup("variants"); f != nil && f.Value.String() == "true" {
		c.Variants = campaign.DemoVariants()
	}
	return c, c.Check()
}

// tuiBinds are the cockpit's flags that set keys of its campaign.
var tuiBinds = []campaign.Flag{{Name: "loadgen", Key: "macro.loadgen.mode"}, {Name: "loadgen-hosts", Key: "macro.loadgen.hosts"}}

// TUIMain runs the cockpit for a campaign file.
func TUIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflags.New("tui")
	path := fs.String("c", campaign.DefaultPath, "campaign file")
	fs.String("loadgen", "", "where the sweep's and the profile's load generator runs: here, or host (the GPU host; default: the campaign's macro.loadgen)")
	fs.String("loadgen-hosts", "", "the load agents' hosts, HOST[:PROCS],… (e.g. gen1:2,gen2:2): the sweep's levels are split between them and merged (default: the campaign's macro.loadgen.hosts)")
	if code, ok := parseFlags(fs, args, "profdeck tui [-c FILE] [--loadgen here|host] [--loadgen-hosts HOST[:PROCS],…]", stderr); !ok {
		return code
	}
	c, err := campaign.LoadFile(*path)
	var set []string
	if err == nil {
		if err = c.ApplyFlags(fs, tuiBinds...); err == nil {
			set = c.QuickSim(true)
			err = c.Check()
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "profdeck: no campaign file %s: write one with `profdeck init`, or try `profdeck demo`\n", *path)
		} else {
			fmt.Fprintf(stderr, "profdeck: %v\n", err)
		}
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(set) > 0 {
		// Said whole here, where it stays after the full screen closes,
		// and on one row of the cockpit's status bar as it opens.
		fmt.Fprintf(stderr, "profdeck tui: %s\n", campaign.QuickSimNote(set))
	}
	fmt.Fprintf(stderr, "profdeck: connecting to %s…\n", c.Host)
	opts := c.HostOptions()
	opts.Prompt = terminalPrompt(stderr)
	nodes, err := hosts.OpenNodes(ctx, c.NodeSpecs(), opts)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck: %v\n", err)
		return 1
	}
	defer hosts.CloseAll(nodes[1:])
	return runCockpit(ctx, c, nodes[0], cockpitOptions{notice: quickNotice(set)}, stderr, nodes...)
}

// parseFlags parses a cockpit command's flags: ok, or the exit status (0
// after -h, 2 after a wrong flag said in one line).
func parseFlags(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) (int, bool) {
	err := cliflags.Parse(fs, args, usage, stderr)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	}
	fmt.Fprintf(stderr, "profdeck %s: %v\n", fs.Name(), err)
	return 2, false
}

// cockpitOptions are what a front-end asks of the cockpit beyond its
// campaign: the phases whose pane starts at once, and a notice for the
// status bar as it opens (what the simulated host's quick settings set).
type cockpitOptions struct {
	autoStart map[string]bool
	notice    []components.Field
}

// runCockpit opens the session and runs the program until the operator quits.
// nodes, when there are several, are every node, host first.
func runCockpit(ctx context.Context, c *campaign.Campaign, host remote.Host, o cockpitOptions, stderr io.Writer, nodes ...remote.Host) int {
	defer host.Close()
	if len(nodes) < 2 {
		nodes = []remote.Host{host}
	}
	now := time.Now
	op, err := campaign.Open(ctx, c, nodes, campaign.OpenOptions{Version: Version, Now: now, Background: true})
	if err != nil {
		fmt.Fprintf(stderr, "profdeck: %v\n", err)
		return 1
	}
	defer op.Close()
	sess := op.Session
	for _, n := range nodes {
		go phases.ForwardStates(ctx, n, &phases.Emitter{Out: sess.Sink()})
	}
	// The phases stop when the program ends, before the session and the
	// journal do, so that how each ended is still journalled.
	phaseCtx, stopPhases := context.WithCancel(ctx)
	defer stopPhases()
	go func() {
		// A journal that fails (a full disk) stops every phase: what
		// they do next could not be recorded. The panes show the error.
		select {
		case <-sess.Failed():
			stopPhases()
		case <-phaseCtx.Done():
		}
	}()
	d := &common.Deps{
		Ctx: phaseCtx, Host: host, Campaign: c, Session: sess,
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: now, APIKey: op.APIKey, AutoStart: o.autoStart,
		Server: c.NodeServer(nodes), RunIdentity: c.RunIdentity(),
	}
	if len(nodes) > 1 {
		d.Nodes = nodes
	}
	d.RunCampaign = campaignRunner(c, nodes, op, d.Server)
	root := New(d, op.Saver)
	root.Notice(o.notice)
	p := tea.NewProgram(root, tea.WithContext(ctx))
	_, runErr := p.Run()
	stopPhases()
	waitPhases(sess, op.Prior, 3*time.Second)
	op.Saver.Close()
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) {
		fmt.Fprintf(stderr, "profdeck: %v\n", runErr)
		return 1
	}
	fmt.Fprintf(stderr, "profdeck: journal %s, notebook %s\n", c.JournalPath(), c.Notebook)
	if jerr := sess.JournalErr(); jerr != nil {
		fmt.Fprintf(stderr, "profdeck: %v: the phases were stopped, as what they did next could not be recorded\n", jerr)
		return 3
	}
	return 0
}

// waitPhases waits, at most timeout, until every phase that started in this
// session (after the first skip journalled events) has journalled its end,
// so that a sweep cut short by quitting reads as stopped in the notebook,
// not as still running. The load is not waited for: the server goes on
// loading after the cockpit quits.
func waitPhases(sess *report.Session, skip int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		var open phases.Brackets
		evs := sess.Events()
		for _, ev := range evs[min(skip, len(evs)):] {
			open.See(ev)
		}
		waiting := false
		for _, name := range open.Names() {
			waiting = waiting || name != phases.Load
		}
		if !waiting || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// campaignRunner is the Notes pane's r key: the campaign's remaining steps
// on the cockpit's session, with the Load pane's server (its watcher
// reports the loads, so the run follows them quietly), and its sweep over
// the campaign's load agents when it names some.
func campaignRunner(c *campaign.Campaign, nodes []remote.Host, op *campaign.Opened,
	srv *load.Server) func(context.Context) (*campaignrun.Result, error) {
	return func(ctx context.Context) (*campaignrun.Result, error) {
		cfg, err := c.CampaignRunConfigOn(nodes, op.APIKey)
		if err != nil {
			return nil, err
		}
		release, err := c.WithAgents(ctx, &cfg)
		if err != nil {
			return nil, err
		}
		defer release()
		cfg.Server, cfg.QuietFollow, cfg.Prior = srv, true, op.Session.Events()
		cfg.WriteNotebook = op.WriteNotebook
		cfg.Predict = func(spec phases.VariantSpec) phases.VariantPrediction {
			return report.PredictVariant(report.BaselineOf(report.SettledBaseline(op.Session)), c.Server.Launch, spec)
		}
		return campaignrun.Run(ctx, cfg, &phases.Emitter{Out: op.Session.Sink()})
	}
}

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
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	campaignrun "github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/headless"
)

// Version is shown in the journal; main sets it.
var Version = "dev"

// DemoMain runs the cockpit on the simulated deployment. The campaign runs
// by itself (every step, so every pane and the budget fill) unless --manual.
func DemoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "folder for the demo's notebook and journal (default: a new temporary folder)")
	manual := fs.Bool("manual", false, "drive the panes by hand instead of running the campaign (the sweep starts at once)")
	loadTime := fs.Duration("load-time", 0, "how long the simulated 30-minute load takes (default 30s, 60s with --manual)")
	stallAt := fs.Float64("stall-at", 0, "simulate a load that stalls at this many GiB per GPU (e.g. 75.8)")
	profStallAt := fs.Float64("stall-with-profiler-at", 0, "simulate a restart with the profiler that stalls at this many GiB per GPU")
	stallAfter := fs.Duration("stall-after", 0, "call the load stalled after this long without progress (default: the demo's 10s)")
	fail := fs.String("fail", "", "simulate a load that fails: oom or nccl")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *fail != "" && *fail != "oom" && *fail != "nccl" {
		fmt.Fprintf(stderr, "profdeck demo: --fail %q: want oom or nccl\n", *fail)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck demo: unexpected argument %q\n", fs.Arg(0))
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
	if *loadTime <= 0 {
		*loadTime = 30 * time.Second
		if *manual {
			*loadTime = 60 * time.Second
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dep, err := sim.Start(ctx, sim.Options{LoadTime: *loadTime, StallAtGiB: *stallAt, ProfilerStallAtGiB: *profStallAt,
		FailWith: *fail, AutoStart: *manual, Emulator: vllmemu.Config{ServeBeforeReady: *manual}})
	if err != nil {
		fmt.Fprintf(stderr, "profdeck demo: simulated deployment: %v\n", err)
		return 1
	}
	c := campaign.Demo(*dir)
	if *stallAfter > 0 {
		c.Load.StallAfter.Duration = *stallAfter
	}
	auto := map[string]bool{phases.Notes: true}
	if *manual {
		auto = map[string]bool{phases.Macro: true}
	}
	return runCockpit(ctx, c, dep, auto, stderr)
}

// TUIMain runs the cockpit for a campaign file.
func TUIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", campaign.DefaultPath, "campaign file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := campaign.LoadFile(*path)
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
	fmt.Fprintf(stderr, "profdeck: connecting to %s…\n", c.Host)
	opts := c.HostOptions()
	opts.Sim = c.SimOptions() // the campaign's sim section, as run takes it
	opts.Prompt = terminalPrompt(stderr)
	nodes, err := hosts.OpenNodes(ctx, c.NodeSpecs(), opts)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck: %v\n", err)
		return 1
	}
	defer hosts.CloseAll(nodes[1:])
	return runCockpit(ctx, c, nodes[0], nil, stderr, nodes...)
}

// runCockpit opens the session and runs the program until the operator quits.
// nodes, when there are several, are every node, host first.
func runCockpit(ctx context.Context, c *campaign.Campaign, host remote.Host, autoStart map[string]bool, stderr io.Writer, nodes ...remote.Host) int {
	defer host.Close()
	journal, err := report.OpenJournal(c.JournalPath())
	if err != nil {
		fmt.Fprintf(stderr, "profdeck: %v\n", err)
		return 1
	}
	defer journal.Close()
	sess := report.NewSession(ctx, journal)
	prior := len(sess.Events()) // a resumed campaign's events
	apiKey := c.APIKey()
	sess.Redact(apiKey)
	now := time.Now
	if err := sess.Record(phases.New(now(), phases.KindSessionStarted, phases.SessionStarted{
		Campaign: c.Name, Host: host.Name(), Simulated: remote.IsSimulated(host),
		Notebook: c.Notebook, Version: Version,
	})); err != nil {
		fmt.Fprintf(stderr, "profdeck: %v\n", err)
		return 1
	}
	go gatherSystem(ctx, sess, host, c.Server.Launch)
	go phases.ForwardStates(ctx, host, &phases.Emitter{Out: sess.Sink()})
	saver := report.NewAutosave(sess, c.Notebook, report.NotebookOptions{Campaign: c.Name, Now: now}, 3*time.Second)
	// The phases stop when the program ends, before the session and the
	// journal do, so that how each ended is still journalled.
	phaseCtx, stopPhases := context.WithCancel(ctx)
	defer stopPhases()
	d := &common.Deps{
		Ctx: phaseCtx, Host: host, Campaign: c, Session: sess,
		Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap(),
		Now: now, APIKey: apiKey, AutoStart: autoStart,
		Server: &load.Server{Host: host, Settings: c.ServerSettings()}, RunIdentity: c.RunIdentity(),
	}
	if len(nodes) > 1 {
		d.Nodes, d.Server = nodes, c.NodeServer(nodes)
		for _, n := range nodes[1:] {
			go gatherSystem(ctx, sess, n, c.Server.WorkerLaunch)
			go phases.ForwardStates(ctx, n, &phases.Emitter{Out: sess.Sink()})
		}
	} else {
		nodes = []remote.Host{host}
	}
	d.RunCampaign = campaignRunner(c, nodes, sess, saver, d.Server, apiKey)
	p := tea.NewProgram(New(d, saver), tea.WithContext(ctx))
	_, runErr := p.Run()
	stopPhases()
	waitPhases(sess, prior, 3*time.Second)
	saver.Close()
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) {
		fmt.Fprintf(stderr, "profdeck: %v\n", runErr)
		return 1
	}
	fmt.Fprintf(stderr, "profdeck: journal %s, notebook %s\n", c.JournalPath(), c.Notebook)
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
		open := map[string]bool{}
		evs := sess.Events()
		for _, ev := range evs[min(skip, len(evs)):] {
			switch v := ev.Data.(type) {
			case phases.PhaseStarted:
				open[v.Name] = v.Name != phases.Load
			case phases.PhaseFinished:
				open[v.Name] = false
			case phases.RunStarted:
				open["run"] = true
			case phases.RunFinished:
				open["run"] = false
			}
		}
		waiting := false
		for _, o := range open {
			waiting = waiting || o
		}
		if !waiting || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gatherSystem records the host's system metadata once per campaign.
func gatherSystem(ctx context.Context, sess *report.Session, host remote.Host, launch string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, err := report.GatherSystemInfo(ctx, host, launch)
	if err != nil {
		_ = sess.Record(phases.New(time.Now(), phases.KindError, phases.ErrorEvent{Where: "system info", Err: err.Error()}))
		return
	}
	_ = sess.Record(phases.New(time.Now(), phases.KindSystemInfo, info))
}

// campaignRunner is the Notes pane's r key: the campaign's remaining steps
// on the cockpit's session, with the Load pane's server (its watcher
// reports the loads, so the run follows them quietly).
func campaignRunner(c *campaign.Campaign, nodes []remote.Host, sess *report.Session, saver *report.Autosave,
	srv *load.Server, apiKey string) func(context.Context) (*campaignrun.Result, error) {
	return func(ctx context.Context) (*campaignrun.Result, error) {
		cfg, err := headless.RunConfig(c, nodes, apiKey)
		if err != nil {
			return nil, err
		}
		cfg.Server, cfg.QuietFollow, cfg.Prior = srv, true, sess.Events()
		cfg.WriteNotebook = func(context.Context) (string, error) {
			headless.Flush(sess)
			p, _, err := saver.WriteNow()
			return p, err
		}
		return campaignrun.Run(ctx, cfg, &phases.Emitter{Out: sess.Sink()})
	}
}

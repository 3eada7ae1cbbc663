package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/localfs"
	"github.com/profdeck/profdeck/report"
)

const runUsage = `profdeck run [-c FILE] [--host HOST] [--phases load,macro,micro,nccl,profile]
                   [--redo STEP|PHASE,...] [--keep] [--loadgen here|host] [--skip-doctor] [--stop-pid PID]
                   [--order one-load|classic] [--json FILE|-] [--jsonl FILE]

Runs the campaign in one load: free the GPUs, micro, nccl, serve with the
torch profiler configured, macro, profile (C=1 and the plateau's C), leave
the server as run.leave_server says, notebook. --order classic (run.order)
serves, sweeps, frees the GPUs for micro and nccl, restarts with the
profiler and profiles. It prints its plan (loads counted, expected time)
first and the time each step took at the end. Steps the journal has done for the
same model, TP and launch command and the same parameters are not done
again unless --redo names them; a step done with other parameters (its
campaign section) is done again, saying what changed, unless --keep. Exit 0 when every step is done, 3 when one failed, stalled or was
skipped (one line each on stderr), 2 for bad input, 1 when it could not
start, 130 when interrupted (the step in flight is journalled as stopped).`

// Version is the profdeck version journalled with each session; main sets it.
var Version = "dev"

// RunMain is `profdeck run`.
func RunMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, f := newRun(stdout, stderr)
	if err := cmd.Parse(args); err != nil {
		return cmd.Exit(ctx, err)
	}
	c, o, err := f.plan(cmd)
	if err != nil {
		return cmd.Exit(ctx, err)
	}
	nodes, err := cmd.OpenNodes(ctx, c, nil)
	if err != nil {
		return cmd.Exit(ctx, err)
	}
	defer hosts.CloseAll(nodes)
	o.Nodes = nodes
	observe, stopProgress := cmd.startProgress(ctx)
	o.Log, o.Progress = cmd.Stderr, observe
	res, events, err := Campaign(ctx, c, nodes[0], o)
	stopProgress()
	var jerr *JournalError
	if errors.As(err, &jerr) {
		code := finish(cmd, res, events, fleetAsk(c))
		fmt.Fprintf(cmd.Stderr, "profdeck run: %v\n", jerr)
		if code == ExitOK || code == ExitInterrupted {
			code = ExitStepFailed
		}
		return cmd.ExitCode(code)
	}
	if err != nil {
		return cmd.Exit(ctx, err)
	}
	return cmd.ExitCode(finish(cmd, res, events, fleetAsk(c)))
}

// checkRunFiles refuses, before any work, a journal that is not a regular
// file (a FIFO or /dev/zero would hang its reading), a notebook that
// cannot be written, and an output that is one of the campaign's files.
func checkRunFiles(cmd *Command, c *campaign.Campaign) error {
	journal := c.JournalPath()
	if err := localfs.CheckInput(journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return BadInput("journal %v", err)
	}
	if err := localfs.CheckOutput(c.Notebook, true); err != nil {
		return BadInput("notebook %s: %v", c.Notebook, err)
	}
	return cmd.CheckOverlap(localfs.Named{Name: "the journal", Path: journal, Output: true},
		localfs.Named{Name: "the notebook", Path: c.Notebook, Output: true})
}

// runFlags are the run command's own flags.
type runFlags struct {
	phases, redo     string
	skipDoctor, keep bool
	stopPID          int
}

// newRun is the run command with its flags.
func newRun(stdout, stderr io.Writer) (*Command, *runFlags) {
	cmd := New("run", runUsage, stdout, stderr)
	f := &runFlags{}
	cmd.Flags.StringVar(&f.phases, "phases", "", "only the steps of these phases: load,macro,micro,nccl,profile (default all)")
	cmd.Flags.StringVar(&f.redo, "redo", "", "steps or phases to do again although the journal has them done")
	cmd.Flags.BoolVar(&f.keep, "keep", false, "keep steps done earlier with other parameters (default: do them again, saying what changed)")
	cmd.Flags.IntVar(&f.stopPID, "stop-pid", 0, "a process profdeck did not launch that the run may stop to free the GPUs (yours, by its pid); by default only profdeck's own launch is stopped")
	cmd.Flags.BoolVar(&f.skipDoctor, "skip-doctor", false, "do not run the doctor's checks first (a failing check stops the run before the load)")
	cmd.Flags.String("loadgen", "", "where the sweep's load generator runs: here, or host (the GPU host; default: the campaign's macro.loadgen)")
	cmd.Flags.String("loadgen-hosts", "", "the load agents' hosts, HOST[:PROCS],… (e.g. gen1:2,gen2:2): the sweep's levels are split between them and merged (default: the campaign's macro.loadgen.hosts)")
	cmd.Flags.String("order", "", "the steps' order: one-load (micro and NCCL first, one load with the profiler set) or classic (default: the campaign's run.order, else one-load with a launch command)")
	cmd.flagProgress()
	return cmd, f
}

// runBinds are the run command's flags that set campaign keys.
var runBinds = []campaign.Flag{{Name: "loadgen", Key: "macro.loadgen.mode"}, {Name: "loadgen-hosts", Key: "macro.loadgen.hosts"}, {Name: "order", Key: "run.order"}}

// plan is the campaign file with the flags over it and the run's options,
// checked before anything starts.
func (f *runFlags) plan(cmd *Command) (*campaign.Campaign, Options, error) {
	o := Options{Phases: splitList(f.phases), Redo: splitList(f.redo), JSONL: cmd.JSONL(), Log: cmd.Stderr, SkipDoctor: f.skipDoctor, Keep: f.keep,
		StopPID: f.stopPID}
	if f.stopPID < 0 || f.stopPID == 1 {
		return nil, o, BadInput("--stop-pid %d: want the pid of one process of yours, more than 1", f.stopPID)
	}
	if err := campaignrun.CheckNames(o.Phases, false); err != nil {
		return nil, o, BadInput("--phases: %v", err)
	}
	if err := campaignrun.CheckNames(o.Redo, true); err != nil {
		return nil, o, BadInput("--redo: %v", err)
	}
	c, fromFile, err := cmd.Campaign(runBinds...)
	if err != nil {
		return nil, o, err
	}
	if !fromFile {
		return nil, o, BadInput("no campaign file %s: write one with `profdeck init`", campaign.DefaultPath)
	}
	if err := checkRunFiles(cmd, c); err != nil {
		return nil, o, err
	}
	cmd.AsideDir = filepath.Dir(c.JournalPath())
	if _, err := c.ModelSpec(); err != nil {
		return nil, o, &BadInputError{Err: err}
	}
	return c, o, nil
}

func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Options shape one campaign run.
type Options struct {
	Phases, Redo []string
	JSONL        io.Writer // every event as a JSON line (nil for none)
	Log          io.Writer // progress lines (nil for none)
	// Nodes are every node of a deployment on several hosts, the head
	// (host) first; empty for one.
	Nodes []remote.Host
	// SkipDoctor leaves out the doctor step (its checks).
	SkipDoctor bool
	// Keep keeps steps done earlier with other parameters.
	Keep bool
	// StopPID is a process the run may stop to free the GPUs when
	// profdeck's own launch is gone (--stop-pid); 0 for none.
	StopPID int
	// Progress, when set, is given every event (where the run stands).
	Progress func(phases.Event)
}

// Campaign runs the campaign on host with its own session on the campaign's
// journal, and returns the run's result and the journal's events at the end.
// An error means it could not start (the journal, the configuration).
func Campaign(ctx context.Context, c *campaign.Campaign, host remote.Host, o Options) (*campaignrun.Result, []phases.Event, error) {
	nodes := o.Nodes
	if len(nodes) == 0 {
		nodes = []remote.Host{host}
	}
	apiKey := c.APIKey()
	cfg, err := c.CampaignRunConfigOn(nodes, apiKey)
	if err != nil {
		return nil, nil, err
	}
	closeAgents, err := c.WithAgents(ctx, &cfg)
	if err != nil {
		return nil, nil, err
	}
	defer closeAgents()
	cfg.Phases, cfg.Redo, cfg.Keep = o.Phases, o.Redo, o.Keep
	if cfg.Server != nil {
		cfg.Server.GivenPID = o.StopPID
	}
	if o.SkipDoctor {
		cfg.Doctor = nil
	}
	if rr, err := report.ReadJournalFile(c.JournalPath()); err == nil {
		cfg.Prior = rr.Events // what is done, read before the session starts
	}
	if err := campaignrun.Check(ctx, cfg); err != nil {
		return nil, nil, err // nothing started: not even the session
	}
	runPlan(o.Log, c, cfg)
	// The session outlives an interrupt, so the step it cut short and the
	// notebook are still journalled.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	op, err := campaign.Open(sctx, c, nodes, campaign.OpenOptions{Version: Version})
	if err != nil {
		return nil, nil, err
	}
	defer op.Close()
	sess := op.Session
	cfg.Prior = sess.Events()
	cfg.WriteNotebook = op.WriteNotebook
	cfg.Predict = predictFrom(sess, c.Server.Launch)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		follow(sctx, sess, op.Saver, o.Log, o.JSONL, o.Progress)
	}()
	res, runErr := campaignrun.Run(stopOnJournalError(ctx, sess), cfg, &phases.Emitter{Out: sess.Sink()})
	sess.Sync()
	op.Saver.Close()
	stop()
	<-sess.Done()
	<-printed
	if res == nil {
		return nil, nil, runErr // refused before its first step
	}
	if jerr := sess.JournalErr(); jerr != nil {
		res.Interrupted = false // stopped for the journal, not by the operator
		return res, sess.Events(), &JournalError{Err: jerr}
	}
	return res, sess.Events(), nil
}

// JournalError is a journal write or sync that failed during a run (a full
// disk, a quota, an I/O error): the run stopped there, exit 3.
type JournalError struct{ Err error }

func (e *JournalError) Error() string {
	return fmt.Sprintf("%v: the run was stopped, as what it does next could not be recorded; free space and run it again to resume", e.Err)
}
func (e *JournalError) Unwrap() error { return e.Err }

// stopOnJournalError is ctx, also cancelled when the session's journal
// fails: a run does not go on when nothing it does is recorded.
func stopOnJournalError(ctx context.Context, sess *report.Session) context.Context {
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		select {
		case <-sess.Failed():
		case <-rctx.Done():
		}
	}()
	return rctx
}

// runReport is what --json writes.
type runReport struct {
	Steps       []campaignrun.StepResult `json:"steps"`
	Notebook    string                   `json:"notebook"`
	Plateau     int                      `json:"plateau,omitempty"`
	Interrupted bool                     `json:"interrupted,omitempty"`
	Budget      report.BudgetResult      `json:"budget"`
	// Variants are the campaign's variants: spec, prediction, measured
	// figures, the prediction's errors (%) and how each ended.
	Variants []runVariant `json:"variants,omitempty"`
}

// finish prints the steps, one stderr line per step not done, writes --json
// and returns the exit code.
func finish(cmd *Command, res *campaignrun.Result, events []phases.Event, ask report.FleetAsk) int {
	stderr := cmd.Stderr
	fmt.Fprint(cmd.Human(), StepsTable(res))
	runTook(cmd.Human(), res)
	code := ExitOK
	for _, s := range res.Steps {
		switch {
		case s.Variant != "": // said below, by the variant's name
		case s.State == phases.StepDone || s.State == phases.StepPending:
		case s.State == phases.StepStopped:
			fmt.Fprintf(stderr, "profdeck run: step %s stopped: %s\n", s.Name, s.Reason)
		default:
			fmt.Fprintf(stderr, "profdeck run: step %s %s: %s\n", s.Name, s.State, s.Reason)
			code = ExitStepFailed
		}
	}
	rep := runReport{Steps: res.Steps, Notebook: res.Notebook, Plateau: res.Plateau,
		Interrupted: res.Interrupted, Budget: report.Budget(report.VariantEvents(events)[phases.Baseline]),
		Variants: runVariants(events, ask)}
	for _, v := range rep.Variants {
		if v.State == phases.StepFailed || v.State == phases.StepStalled {
			fmt.Fprintf(stderr, "profdeck run: variant %s %s: %s\n", v.Name, v.State, v.Evidence)
			code = ExitStepFailed
		}
	}
	if err := cmd.WriteJSON(rep); err != nil {
		fmt.Fprintf(stderr, "profdeck run: %v\n", err)
		return ExitStepFailed // the document is written aside, or lost: said above
	}
	if res.Interrupted {
		fmt.Fprintln(stderr, "profdeck run: interrupted; run it again to resume at the step it was in")
		return ExitInterrupted
	}
	return code
}

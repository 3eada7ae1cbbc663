// Package headless holds the commands that run a phase, or the whole
// campaign, without the cockpit: progress on stderr, results on stdout and
// in --json, and exit codes scripts can test.
package headless

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/report/campaign"
)

const runUsage = `usage: profdeck run [-c FILE] [--host HOST] [--phases load,macro,micro,nccl,profile]
                   [--redo STEP|PHASE,...] [--json FILE|-] [--jsonl FILE]

Runs the campaign in order: serve, macro, free the GPUs, micro, nccl,
restart with the profiler, profile (C=1 and the plateau's C), leave the
server as run.leave_server says, notebook. Steps the journal has done for the
same model, TP and launch command are not done again unless --redo names
them. Exit 0 when every step is done, 3 when one failed, stalled or was
skipped (one line each on stderr), 2 for bad input, 1 when it could not
start, 130 when interrupted (the step in flight is journalled as stopped).`

// runFlags are the options of `profdeck run`.
type runFlags struct {
	campaign, host, json, jsonl string
	phases, redo                []string
}

// Version is the profdeck version journalled with each session; main sets it.
var Version = "dev"

// RunMain is `profdeck run`.
func RunMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	c, err := campaign.LoadFile(f.campaign)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "profdeck run: no campaign file %s: write one with `profdeck init`\n", f.campaign)
		} else {
			fmt.Fprintf(stderr, "profdeck run: %v\n", err)
		}
		return 2
	}
	if f.host != "" {
		c.Host = f.host
	}
	host, err := hosts.Open(ctx, c.Host, HostOptions(c))
	if err != nil {
		fmt.Fprintf(stderr, "profdeck run: host %s: %v\n", c.Host, err)
		return 1
	}
	defer host.Close()
	res, events, err := Campaign(ctx, c, host, Options{Phases: f.phases, Redo: f.redo, JSONL: f.jsonl, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "profdeck run: %v\n", err)
		return 1
	}
	return finish(res, events, f.json, stdout, stderr)
}

func parseRunFlags(args []string, stdout, stderr io.Writer) (runFlags, int, bool) {
	var f runFlags
	var phasesList, redoList string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.campaign, "c", campaign.DefaultPath, "campaign file")
	fs.StringVar(&f.host, "host", "", "host: sim, local or an SSH target (overrides the campaign)")
	fs.StringVar(&phasesList, "phases", "", "only the steps of these phases: load,macro,micro,nccl,profile (default all)")
	fs.StringVar(&redoList, "redo", "", "steps or phases to do again although the journal has them done")
	fs.StringVar(&f.json, "json", "", "write the steps, the notebook's path and the decode-time budget to FILE (- for stdout)")
	fs.StringVar(&f.jsonl, "jsonl", "", "write every event as a JSON line to FILE as it happens")
	fs.Usage = func() { fmt.Fprintln(stderr, runUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, 0, false
		}
		return f, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck run: unexpected argument %q\n", fs.Arg(0))
		return f, 2, false
	}
	f.phases, f.redo = splitList(phasesList), splitList(redoList)
	if err := run.CheckNames(f.phases, false); err != nil {
		fmt.Fprintf(stderr, "profdeck run: --phases: %v\n", err)
		return f, 2, false
	}
	if err := run.CheckNames(f.redo, true); err != nil {
		fmt.Fprintf(stderr, "profdeck run: --redo: %v\n", err)
		return f, 2, false
	}
	for flagName, p := range map[string]string{"--json": f.json, "--jsonl": f.jsonl} {
		if err := checkOutput(p); err != nil {
			fmt.Fprintf(stderr, "profdeck run: %s %s: %v\n", flagName, p, err)
			return f, 2, false
		}
	}
	return f, 0, true
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

// checkOutput checks, before any work, that an output file can be written.
func checkOutput(p string) error {
	if p == "" || p == "-" {
		return nil
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	dir := filepath.Dir(p)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("its folder: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// Options shape one campaign run.
type Options struct {
	Phases, Redo []string
	JSONL        string    // every event as a JSON line ("" for none)
	Log          io.Writer // progress lines (nil for none)
}

// Campaign runs the campaign on host with its own session on the campaign's
// journal, and returns the run's result and the journal's events at the end.
// An error means it could not start (the journal, the configuration).
func Campaign(ctx context.Context, c *campaign.Campaign, host remote.Host, o Options) (*run.Result, []phases.Event, error) {
	journal, err := report.OpenJournal(c.JournalPath())
	if err != nil {
		return nil, nil, err
	}
	defer journal.Close()
	var jsonl *os.File
	if o.JSONL != "" {
		if jsonl, err = os.Create(o.JSONL); err != nil {
			return nil, nil, fmt.Errorf("--jsonl: %w", err)
		}
		defer jsonl.Close()
	}
	apiKey := os.Getenv(apiKeyEnv(c))
	cfg, err := RunConfig(c, host, apiKey)
	if err != nil {
		return nil, nil, err
	}
	// The session outlives an interrupt, so the step it cut short and the
	// notebook are still journalled.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	sess := report.NewSession(sctx, journal)
	sess.Redact(apiKey)
	cfg.Prior = sess.Events()
	if err := sess.Record(phases.New(time.Now(), phases.KindSessionStarted, phases.SessionStarted{
		Campaign: c.Name, Host: host.Name(), Simulated: remote.IsSimulated(host), Notebook: c.Notebook, Version: Version,
	})); err != nil {
		return nil, nil, err
	}
	recordSystem(ctx, sess, host, c.Server.Launch)
	opts := report.NotebookOptions{Campaign: c.Name, Journal: c.JournalPath(), Secrets: sess.Secrets()}
	saver := report.NewAutosave(sess, c.Notebook, opts, 3*time.Second)
	cfg.Phases, cfg.Redo = o.Phases, o.Redo
	cfg.WriteNotebook = func(context.Context) (string, error) {
		flush(sess)
		path, _, err := saver.WriteNow()
		return path, err
	}
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		follow(sctx, sess, saver, o.Log, jsonl)
	}()
	res, _ := run.Run(ctx, cfg, &phases.Emitter{Out: sess.Sink()})
	flush(sess)
	saver.Close()
	stop()
	<-sess.Done()
	<-printed
	return res, sess.Events(), nil
}

func apiKeyEnv(c *campaign.Campaign) string {
	if c.Server.APIKeyEnv != "" {
		return c.Server.APIKeyEnv
	}
	return "OPENAI_API_KEY"
}

// flush waits until the events sent to the session are journalled.
func flush(sess *report.Session) {
	for i := 0; i < 400 && len(sess.Sink()) > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	sess.Settle(2 * time.Second)
}

// recordSystem journals the host's system metadata once per run.
func recordSystem(ctx context.Context, sess *report.Session, host remote.Host, launch string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, err := report.GatherSystemInfo(ctx, host, launch)
	if err != nil {
		_ = sess.Record(phases.New(time.Now(), phases.KindError, phases.ErrorEvent{Where: "system info", Err: err.Error()}))
		return
	}
	_ = sess.Record(phases.New(time.Now(), phases.KindSystemInfo, info))
}

// runReport is what --json writes.
type runReport struct {
	Steps       []run.StepResult    `json:"steps"`
	Notebook    string              `json:"notebook"`
	Plateau     int                 `json:"plateau,omitempty"`
	Interrupted bool                `json:"interrupted,omitempty"`
	Budget      report.BudgetResult `json:"budget"`
}

// finish prints the steps, one stderr line per step not done, writes --json
// and returns the exit code.
func finish(res *run.Result, events []phases.Event, jsonPath string, stdout, stderr io.Writer) int {
	if jsonPath != "-" {
		fmt.Fprint(stdout, StepsTable(res))
	}
	code := 0
	for _, s := range res.Steps {
		switch s.State {
		case phases.StepDone, phases.StepPending:
		case phases.StepStopped:
			fmt.Fprintf(stderr, "profdeck run: step %s stopped: %s\n", s.Name, s.Reason)
		default:
			fmt.Fprintf(stderr, "profdeck run: step %s %s: %s\n", s.Name, s.State, s.Reason)
			code = 3
		}
	}
	if jsonPath != "" {
		rep := runReport{Steps: res.Steps, Notebook: res.Notebook, Plateau: res.Plateau,
			Interrupted: res.Interrupted, Budget: report.Budget(events)}
		if err := writeJSON(jsonPath, stdout, rep); err != nil {
			fmt.Fprintf(stderr, "profdeck run: --json: %v\n", err)
			return 1
		}
	}
	if res.Interrupted {
		fmt.Fprintln(stderr, "profdeck run: interrupted; run it again to resume at the step it was in")
		return 130
	}
	return code
}

func writeJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

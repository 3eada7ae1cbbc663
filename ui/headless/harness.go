// Package headless holds profdeck's headless commands (sweep, load, micro, nccl,
// profile and the parsers) and the harness they share: one convention of
// flags (-c FILE, --host HOST, --json FILE|-, --jsonl FILE), one path from
// campaign or flags to a host and an engine configuration, output paths
// checked before any work starts, and one set of exit codes:
//
//	0    the work ran (failed requests are data)
//	1    it could not run (host, server or GPUs not available)
//	2    bad input: one line on stderr names it
//	3    a step failed or stalled
//	130  interrupted (what was gathered is still written)
package headless

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/localfs"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/cliflags"
)

// The exit codes of every headless command.
const (
	ExitOK          = 0
	ExitCannotRun   = 1
	ExitBadInput    = 2
	ExitStepFailed  = 3
	ExitInterrupted = 130
)

// BadInputError is an error in what the operator gave (a flag, a file, a
// campaign value): the command says it in one line and exits 2.
type BadInputError struct {
	Err error
}

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

// BadInput makes a bad-input error from a message.
func BadInput(format string, args ...any) error {
	return &BadInputError{Err: fmt.Errorf(format, args...)}
}

// StepFailedError is a step that ran and failed or stalled: exit 3.
type StepFailedError struct{ Err error }

func (e *StepFailedError) Error() string { return e.Err.Error() }
func (e *StepFailedError) Unwrap() error { return e.Err }

// Code is the exit status for err: 0 for nil, 2 for bad input, 3 for a
// failed step, 130 when ctx was cancelled, else 1.
func Code(ctx context.Context, err error) int {
	var bad *BadInputError
	var input *phases.InputError
	var step *StepFailedError
	var special *localfs.NotRegularError
	var overlap *localfs.Overlap
	var spec *remote.SpecError
	var large *report.TooLargeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &bad), errors.As(err, &input), errors.As(err, &special), errors.As(err, &overlap),
		errors.As(err, &spec), errors.As(err, &large):
		return ExitBadInput
	case errors.As(err, &step):
		return ExitStepFailed
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitCannotRun
}

// Command is one headless command's flags and output: the shared flags are
// registered on Flags, and the command adds its own.
type Command struct {
	Name   string
	Flags  *flag.FlagSet
	Stdout io.Writer
	Stderr io.Writer

	CampaignPath string // -c
	HostSpec     string // --host
	JSONPath     string // --json FILE|-
	JSONLPath    string // --jsonl FILE|-
	// AsideDir is where the result document goes when --json cannot be
	// written at the end (the journal's folder, when there is one); the
	// temporary folder otherwise.
	AsideDir string
	// kept: the result document's path is the command's choice
	// (keepResult), said once it is written.
	kept bool

	// Inputs names the files the command reads besides the campaign file
	// (a dataset, a journal), once the flags are parsed: no output may be
	// one of them.
	Inputs func() []localfs.Named

	usage string
	jsonl *os.File
	// jsonlW is jsonl behind a lock: the engine's lines and the progress
	// events are written whole, never interleaved.
	jsonlW *lockedWriter
	// progressEvery is --progress-every (0: not given, the default; given,
	// it must be more than 0).
	progressEvery time.Duration
	// quick is what the simulated host's quick settings set
	// (campaign.QuickSim), said once the host is open.
	quick []string
}

// New is the command name with the shared flags; usage is its first help
// line, e.g. "profdeck sweep [-c FILE | --host HOST] [--url URL] ...".
func New(name, usage string, stdout, stderr io.Writer) *Command {
	c := newCommand(name, usage, stdout, stderr)
	c.flagCampaign()
	c.Flags.StringVar(&c.HostSpec, "host", "", "host: sim, local or an SSH target (overrides the campaign; default local)")
	c.flagJSON()
	c.Flags.StringVar(&c.JSONLPath, "jsonl", "", "append events or records as JSON lines to FILE as they happen (- for stdout)")
	return c
}

// newCommand is the command with its usage and none of the shared flags.
func newCommand(name, usage string, stdout, stderr io.Writer) *Command {
	return &Command{Name: name, Flags: cliflags.New(name), Stdout: stdout, Stderr: stderr, usage: usage}
}

func (c *Command) flagCampaign() {
	c.Flags.StringVar(&c.CampaignPath, "c", "", "campaign file (default ./"+campaign.DefaultPath+" when it exists)")
}

func (c *Command) flagJSON() {
	c.Flags.StringVar(&c.JSONPath, "json", "", "write the result document to FILE (- for stdout)")
}

// Parse parses args (no positional arguments) and checks the output paths
// before any work starts. -h is ErrHelp (exit 0); anything else is bad input.
func (c *Command) Parse(args []string) error {
	_, err := c.parseFiles(args, 0, 0)
	return err
}

// ParseFiles parses args, whose flags may come before or after the n
// positional arguments it returns, and checks the output paths.
func (c *Command) ParseFiles(args []string, n int) ([]string, error) {
	return c.parseFiles(args, n, n)
}

// parseFiles is ParseFiles for least to most positional arguments.
func (c *Command) parseFiles(args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := cliflags.Parse(c.Flags, args, c.usage, c.Stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &BadInputError{Err: err}
		}
		if c.Flags.NArg() == 0 {
			break
		}
		pos = append(pos, c.Flags.Arg(0))
		args = c.Flags.Args()[1:]
	}
	if len(pos) > most {
		return nil, BadInput("unexpected argument %q", pos[most])
	}
	if len(pos) < least {
		return nil, BadInput("want %d file argument(s), got %d (see -h)", least, len(pos))
	}
	if c.progressEvery <= 0 && c.Set("progress-every") {
		return nil, BadInput("--progress-every: must be more than 0, got %s", c.progressEvery)
	}
	return pos, c.checkOutputs()
}

// Exit says err on stderr (once, prefixed with the command) and returns the
// exit status. JSON lines that could not all be written make a command
// that otherwise succeeded end with exit 3, saying so.
func (c *Command) Exit(ctx context.Context, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(c.Stderr, "profdeck %s: %v\n", c.Name, err)
	}
	if cerr := c.Close(); cerr != nil {
		fmt.Fprintf(c.Stderr, "profdeck %s: %v\n", c.Name, cerr)
		if err == nil {
			err = cerr
		}
	}
	return Code(ctx, err)
}

// ExitCode closes the outputs and returns code, or exit 3 when code is 0
// and the JSON lines could not all be written (said on stderr).
func (c *Command) ExitCode(code int) int {
	if err := c.Close(); err != nil {
		fmt.Fprintf(c.Stderr, "profdeck %s: %v\n", c.Name, err)
		if code == ExitOK {
			return ExitStepFailed
		}
	}
	return code
}

// Set reports whether the flag name was given on the command line.
func (c *Command) Set(name string) bool {
	set := false
	c.Flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Campaign reads -c FILE, else ./profdeck.yaml when it exists, else the
// defaults; applies --host and the flags bound to campaign keys over it (a
// flag given wins whatever its value); and validates it, before any work
// starts. fromFile says whether a file was read. A bad file or value is bad
// input naming the flag, else the file's line and key.
func (c *Command) Campaign(binds ...campaign.Flag) (camp *campaign.Campaign, fromFile bool, err error) {
	if camp, fromFile, err = c.campaignUnchecked(binds...); err != nil {
		return nil, false, err
	}
	if err := camp.Check(); err != nil {
		return nil, false, &BadInputError{Err: err}
	}
	return camp, fromFile, nil
}

// campaignUnchecked is Campaign without the validation.
func (c *Command) campaignUnchecked(binds ...campaign.Flag) (camp *campaign.Campaign, fromFile bool, err error) {
	path := c.CampaignPath
	camp = campaign.Defaults()
	if path == "" {
		if _, err := os.Stat(campaign.DefaultPath); err == nil {
			path = campaign.DefaultPath
		}
	}
	if path != "" {
		if camp, err = campaign.LoadFile(path); err != nil {
			return nil, false, &BadInputError{Err: err}
		}
	}
	binds = append(binds, campaign.Flag{Name: "host", Key: "host"})
	if err := camp.ApplyFlags(c.Flags, binds...); err != nil {
		return nil, false, &BadInputError{Err: err}
	}
	if sendsSweepRequests[c.Name] {
		c.quick = camp.QuickSim(c.Name == "run")
	}
	return camp, path != "", nil
}

// sendsSweepRequests are the commands whose requests take the macro
// section's lengths and counts, which the simulated host's quick settings
// shorten (the doctor's pre-flight request too); the others neither use
// nor mention them.
var sendsSweepRequests = map[string]bool{"sweep": true, "run": true, "profile": true, "doctor": true}

// OpenHost opens the host with the campaign's SSH settings; opt adjusts the
// options (the simulated deployment's, for one) and may be nil. Headless
// commands never prompt: an unknown host key is an error.
func (c *Command) OpenHost(ctx context.Context, camp *campaign.Campaign, opt func(*hosts.Options)) (remote.Host, error) {
	o := camp.HostOptions()
	if opt != nil {
		opt(&o)
	}
	spec := camp.Host
	h, err := hosts.Open(ctx, spec, o)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", spec, err)
	}
	if remote.IsSimulated(h) {
		fmt.Fprintf(c.Stderr, "profdeck %s: SIMULATED host: what it reports is modelled, not measured\n", c.Name)
		c.sayQuick()
	}
	return h, nil
}

// OpenNodes opens every node of the campaign's deployment, the head first:
// the hosts list, the simulated nodes of sim.nodes, or the one host (--host
// gives one node). The caller closes them (hosts.CloseAll).
func (c *Command) OpenNodes(ctx context.Context, camp *campaign.Campaign, opt func(*hosts.Options)) ([]remote.Host, error) {
	if c.Set("host") || camp.NodeCount() < 2 {
		h, err := c.OpenHost(ctx, camp, opt)
		if err != nil {
			return nil, err
		}
		return []remote.Host{h}, nil
	}
	o := camp.HostOptions()
	if opt != nil {
		opt(&o)
	}
	hs, err := hosts.OpenNodes(ctx, camp.NodeSpecs(), o)
	if err != nil {
		return nil, err
	}
	if remote.IsSimulated(hs[0]) {
		fmt.Fprintf(c.Stderr, "profdeck %s: SIMULATED hosts (%d nodes): what they report is modelled, not measured\n", c.Name, len(hs))
		c.sayQuick()
	}
	return hs, nil
}

// Human is where the human-readable output goes: stdout, unless the JSON
// document or the JSON lines go there.
func (c *Command) Human() io.Writer {
	if c.JSONPath == "-" || c.JSONLPath == "-" {
		return c.Stderr
	}
	return c.Stdout
}

// sayQuick says which quick settings of the simulated host apply.
func (c *Command) sayQuick() {
	if len(c.quick) > 0 {
		fmt.Fprintf(c.Stderr, "profdeck %s: %s\n", c.Name, campaign.QuickSimNote(c.quick))
		c.quick = nil
	}
}

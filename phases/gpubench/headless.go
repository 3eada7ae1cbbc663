package gpubench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
)

// Prepare opens the host (a dry run opens it only when the model config must
// be read there) and builds the plan. With --dry-run it writes the plan as
// JSON and the command is over; so it is on any failure. ok says whether to
// go on and run; otherwise code is the exit status and the host is closed.
func (c *Common) Prepare(ctx context.Context, res *Resolved, stdout, stderr io.Writer) (h remote.Host, plan model.Plan, code int, ok bool) {
	fail := func(code int, err error) (remote.Host, model.Plan, int, bool) {
		fmt.Fprintf(stderr, "profdeck %s: %v\n", c.name, err)
		if h != nil {
			h.Close()
		}
		return nil, model.Plan{}, code, false
	}
	var err error
	if !c.DryRun || needsHost(c.Model) {
		if h, err = res.OpenHost(ctx); err != nil {
			h = nil
			return fail(1, err)
		}
	}
	if plan, err = c.Plan(ctx, h); err != nil {
		return fail(2, err)
	}
	if c.DryRun {
		out := c.JSON
		if out == "" {
			out = "-"
		}
		if err := WriteJSON(out, stdout, plan); err != nil {
			return fail(1, err)
		}
		if h != nil {
			h.Close()
		}
		return nil, model.Plan{}, 0, false
	}
	if remote.IsSimulated(h) {
		fmt.Fprintf(stderr, "profdeck %s: SIMULATED host: the timings are modelled, not measured\n", c.name)
	}
	return h, plan, 0, true
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

// Results gathers a phase's events and prints them as tables.
type Results interface {
	Add(phases.Event)
	WriteTables(io.Writer)
}

// Phase is one headless run of a GPU phase.
type Phase struct {
	Result    Results // folds the events in; its tables go to stdout
	ErrorText func(phases.ScriptError) string
	// Run runs the phase; onRaw is nil when no --lines file is asked for.
	Run func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error
	// Report is what --json writes, given the run's error text ("" when it
	// went well).
	Report func(errText string) any
}

// Run runs the phase: progress and script errors go to stderr as they come,
// then the tables to stdout (unless JSON goes there) and the JSON report.
// The exit status is 0, 1 on failure, 3 when the GPUs are busy (nothing ran)
// and 130 when ctx was cancelled.
func (c *Common) Run(ctx context.Context, p Phase, stdout, stderr io.Writer) int {
	var onRaw func(string)
	if c.Lines != "" {
		raw, err := os.Create(c.Lines)
		if err != nil {
			fmt.Fprintln(stderr, "--lines:", err)
			return 1
		}
		defer raw.Close()
		onRaw = func(s string) { fmt.Fprintln(raw, s) }
	}
	ch := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range ch {
			p.Result.Add(ev)
			switch d := ev.Data.(type) {
			case phases.Progress:
				fmt.Fprintf(stderr, "[%d/%d] %s\n", d.Done, d.Total, d.Text)
			case phases.ScriptError:
				fmt.Fprintln(stderr, "error:", p.ErrorText(d))
			}
		}
	}()
	runErr := p.Run(ctx, &phases.Emitter{Out: ch}, onRaw)
	close(ch)
	wg.Wait()
	code, errText := 0, ""
	if runErr != nil {
		errText = runErr.Error()
		fmt.Fprintf(stderr, "profdeck %s: %v\n", c.name, runErr)
		var busy *pyrun.BusyError
		switch {
		case errors.As(runErr, &busy):
			return 3
		case ctx.Err() != nil:
			code = 130
		default:
			code = 1
		}
	}
	if c.JSON != "-" {
		p.Result.WriteTables(stdout)
	}
	if c.JSON != "" {
		if err := WriteJSON(c.JSON, stdout, p.Report(errText)); err != nil {
			fmt.Fprintf(stderr, "profdeck %s: %v\n", c.name, err)
			return 1
		}
	}
	return code
}

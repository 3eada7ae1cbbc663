package headless

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/remote/localfs"
)

// checkOutputs makes sure --json and --jsonl can be written before any work
// starts: neither is the same file as the other or as an input (Inputs,
// and the campaign file), the JSON lines file is opened (appended to)
// now, and the result document's folder must take a new file.
func (c *Command) checkOutputs() error {
	if c.JSONPath == "-" && c.JSONLPath == "-" {
		return BadInput("--json - and --jsonl - both want stdout: give one of them a file")
	}
	if err := c.CheckOverlap(); err != nil {
		return err
	}
	if c.JSONPath != "" && c.JSONPath != "-" {
		if err := localfs.CheckOutput(c.JSONPath, false); err != nil {
			return BadInput("--json %s: %v", c.JSONPath, err)
		}
	}
	if c.JSONLPath != "" && c.JSONLPath != "-" {
		f, err := os.OpenFile(c.JSONLPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return BadInput("--jsonl %s: %v", c.JSONLPath, localfs.UnwrapPath(err))
		}
		c.jsonl = f
		c.jsonlW = &lockedWriter{w: f}
	}
	return nil
}

// CheckOverlap refuses, as bad input, outputs (--json, --jsonl and more)
// that are the same file as one another or as an input: the campaign file
// (-c, or ./profdeck.yaml read by default), and more.
func (c *Command) CheckOverlap(more ...localfs.Named) error {
	outs := []localfs.Named{{Name: "--json", Path: c.JSONPath}, {Name: "--jsonl", Path: c.JSONLPath}}
	var ins []localfs.Named
	if c.Flags.Lookup("c") != nil {
		camp := c.CampaignPath
		if camp == "" {
			camp = campaign.DefaultPath
		}
		ins = append(ins, localfs.Named{Name: "the campaign file", Path: camp})
	}
	if c.Inputs != nil {
		ins = append(ins, c.Inputs()...)
	}
	for _, m := range more {
		if m.Output {
			outs = append(outs, m)
		} else {
			ins = append(ins, m)
		}
	}
	if err := localfs.CheckOverlap(outs, ins); err != nil {
		return &BadInputError{Err: err}
	}
	return nil
}

// JSONL is where the JSON lines go (nil without --jsonl).
func (c *Command) JSONL() io.Writer {
	switch {
	case c.jsonlW != nil:
		return c.jsonlW
	case c.JSONLPath == "-":
		c.jsonlW = &lockedWriter{w: c.Stdout}
		return c.jsonlW
	}
	return nil
}

// lockedWriter writes each line whole while several goroutines write, and
// keeps the first write error (a full disk, a quota, an I/O error) so that
// the command ends saying the lines are incomplete.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	wrote   int // lines written whole
	err     error
	errLine int // the line that failed, from 1
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		l.err, l.errLine = err, l.wrote+1
		return n, err
	}
	l.wrote++
	return n, nil
}

// failed is the first write error, said with how much was written.
func (l *lockedWriter) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		return nil
	}
	return fmt.Errorf("writing line %d failed (%v): the JSON lines hold the %d before it and nothing after", l.errLine, localfs.UnwrapPath(l.err), l.wrote)
}

// WriteLine appends v to the JSON lines as one line (nothing without
// --jsonl).
func (c *Command) WriteLine(v any) {
	w := c.JSONL()
	if w == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	w.Write(append(b, '\n'))
}

// WriteJSON writes v as the result document (nothing without --json): to
// stdout for -, else with localfs.WriteFile (a temporary file renamed over
// the path, so a reader never sees half a document; a link's target, or a
// device or FIFO in place). When that fails at the end (the disk
// filled, the folder went away), the document is written beside the
// journal (AsideDir) or to a temporary file instead, and the error says
// where: what was measured is not lost.
func (c *Command) WriteJSON(v any) error {
	if c.JSONPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return &StepFailedError{Err: fmt.Errorf("--json %s: the result could not be encoded: %w", c.JSONPath, err)}
	}
	b = append(b, '\n')
	if c.JSONPath == "-" {
		if _, err = c.Stdout.Write(b); err != nil {
			return &StepFailedError{Err: fmt.Errorf("--json -: writing stdout: %w", err)}
		}
		return nil
	}
	err = localfs.WriteFile(c.JSONPath, b, 0o644)
	if err == nil {
		return nil
	}
	where, aerr := c.writeAside(b)
	if aerr != nil {
		return &StepFailedError{Err: fmt.Errorf("--json %s: %v; writing it elsewhere failed too: %v", c.JSONPath, err, aerr)}
	}
	return &StepFailedError{Err: fmt.Errorf("--json %s: %v; the document was written to %s instead", c.JSONPath, err, where)}
}

// writeAside writes b to a new file in AsideDir, else in the temporary
// folder, and returns its path.
func (c *Command) writeAside(b []byte) (string, error) {
	pattern := "profdeck-" + strings.ReplaceAll(c.Name, " ", "-") + "-*.json"
	var errs []string
	for _, dir := range []string{c.AsideDir, os.TempDir()} {
		if dir == "" {
			continue
		}
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		_, werr := f.Write(b)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(f.Name())
			errs = append(errs, werr.Error())
			continue
		}
		return f.Name(), nil
	}
	return "", errors.New(strings.Join(errs, "; "))
}

// Close syncs and closes the JSON lines file. It returns the first error
// writing them (nil when every line reached the disk).
func (c *Command) Close() error {
	var err error
	if c.jsonlW != nil {
		err = c.jsonlW.failed()
	}
	if c.jsonl != nil {
		serr := c.jsonl.Sync()
		if cerr := c.jsonl.Close(); serr == nil {
			serr = cerr
		}
		if err == nil && serr != nil {
			err = fmt.Errorf("sync: %v: the JSON lines may be incomplete", localfs.UnwrapPath(serr))
		}
		c.jsonl = nil
	}
	c.jsonlW = nil
	if err != nil {
		return &StepFailedError{Err: fmt.Errorf("--jsonl %s: %w", c.JSONLPath, err)}
	}
	return nil
}

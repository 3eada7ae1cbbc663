package headless

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// checkOutputs makes sure --json and --jsonl can be written before any work
// starts: the JSON lines file is opened (appended to) now; the result
// document's directory must take a new file and the path must not be a
// directory.
func (c *Command) checkOutputs() error {
	if c.JSONPath != "" && c.JSONPath != "-" {
		if err := checkWritable(c.JSONPath); err != nil {
			return BadInput("--json %s: %v", c.JSONPath, err)
		}
	}
	if c.JSONLPath != "" && c.JSONLPath != "-" {
		f, err := os.OpenFile(c.JSONLPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return BadInput("--jsonl %s: %v", c.JSONLPath, unwrapPath(err))
		}
		c.jsonl = f
	}
	if c.JSONPath == "-" && c.JSONLPath == "-" {
		return BadInput("--json - and --jsonl - both want stdout: give one of them a file")
	}
	return nil
}

// checkWritable reports why path could not be written as a new file (or
// replaced), without leaving anything behind.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("is a directory")
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the path an *os.PathError repeats (the message names it
// already).
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// JSONL is where the JSON lines go (nil without --jsonl).
func (c *Command) JSONL() io.Writer {
	switch {
	case c.JSONLPath == "-":
		return c.Stdout
	case c.jsonl != nil:
		return c.jsonl
	}
	return nil
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
// stdout for -, else to a temporary file renamed over the path, so a
// reader never sees half a document. When that fails at the end (the disk
// filled, the folder went away), the document is written beside the
// journal (AsideDir) or to a temporary file instead, and the error says
// where: what was measured is not lost.
func (c *Command) WriteJSON(v any) error {
	if c.JSONPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if c.JSONPath == "-" {
		_, err = c.Stdout.Write(b)
		return err
	}
	err = writeAtomic(c.JSONPath, b)
	if err == nil {
		return nil
	}
	where, aerr := c.writeAside(b)
	if aerr != nil {
		return fmt.Errorf("--json %s: %v; writing it elsewhere failed too: %v", c.JSONPath, err, aerr)
	}
	return fmt.Errorf("--json %s: %v; the document was written to %s instead", c.JSONPath, err, where)
}

// writeAtomic writes b to a temporary file beside path and renames it over.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return unwrapPath(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return unwrapPath(err)
	}
	return nil
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

// Close closes the JSON lines file.
func (c *Command) Close() {
	if c.jsonl != nil {
		c.jsonl.Close()
		c.jsonl = nil
	}
}

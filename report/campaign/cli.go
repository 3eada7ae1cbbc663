package campaign

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Example is the commented example campaign that `profdeck init` writes.
//
//go:embed example.yaml
var Example []byte

const initUsage = `usage: profdeck init [FILE] [--force]

Writes a commented example campaign file (default ./profdeck.yaml) with
every section and its defaults. An existing file is kept unless --force.`

// InitMain is `profdeck init [FILE] [--force]`.
func InitMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	path, force := "", false
	for _, a := range args {
		switch a {
		case "--force", "-force", "-f":
			force = true
		case "-h", "--help", "-help":
			fmt.Fprintln(stdout, initUsage)
			return 0
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(stderr, "profdeck init: unknown flag %s\n%s\n", a, initUsage)
				return 2
			}
			if path != "" {
				fmt.Fprintf(stderr, "profdeck init: one file at most (got %s and %s)\n", path, a)
				return 2
			}
			path = a
		}
	}
	if path == "" {
		path = DefaultPath
	}
	if err := WriteExample(path, force); err != nil {
		fmt.Fprintf(stderr, "profdeck init: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: a campaign on the built-in simulated deployment (host: sim).\n", path)
	fmt.Fprintln(stdout, "Set host and server.launch for your GPU server, then run: profdeck tui -c "+path)
	return 0
}

// WriteExample writes the example campaign to path. It refuses to replace
// an existing file unless force; the file appears whole or not at all.
func WriteExample(path string, force bool) error {
	if _, err := Parse(Example); err != nil {
		return fmt.Errorf("the built-in example does not parse: %w", err) // a build defect
	}
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s already exists: not overwriting it (use --force to replace it)", path)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".profdeck-init-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(Example); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	// Link fails if path appeared meanwhile, so a file is never clobbered.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists: not overwriting it (use --force to replace it)", path)
		}
		return err
	}
	return nil
}

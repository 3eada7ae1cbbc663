package campaign

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Example is the commented example campaign that `profdeck init` writes.
//
//go:embed example.yaml
var Example []byte

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

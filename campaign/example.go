package campaign

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/profdeck/profdeck/remote/localfs"
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
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	write := localfs.WriteNew
	if force {
		write = localfs.WriteFile
	}
	err := write(path, Example, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: not overwriting it (use --force to replace it)", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

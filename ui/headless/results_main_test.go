package headless

import (
	"os"
	"testing"
)

// TestMain keeps the result documents the tests' commands write by
// default out of the source tree: ResultsDir is a temporary folder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "profdeck-results-")
	if err != nil {
		panic(err)
	}
	ResultsDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

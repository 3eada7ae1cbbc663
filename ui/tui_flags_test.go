package ui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profdeck tui --loadgen is checked as the campaign key is: a value that is
// neither here nor host is one line and exit 2, before any host is opened.
func TestTUILoadgenFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profdeck.yaml")
	if err := os.WriteFile(path, []byte("host: sim\nmacro:\n  loadgen: host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := TUIMain(context.Background(), []string{"-c", path, "--loadgen", "gpu"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--loadgen: must be here or host") || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q: want one line naming --loadgen and exit 2", code, errb.String())
	}
}

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

// profdeck tui on host sim says the quick settings it applies whole, on
// stderr before its full screen opens (where the line stays after the
// screen closes); the status bar gives them one row (TestOpeningNoticeOnOneRow).
func TestTUISaysQuickSettingsWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profdeck.yaml")
	if err := os.WriteFile(path, []byte("host: sim\nnotebook: k.md\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the cockpit does not open: the host's opening is cut short
	var out, errb bytes.Buffer
	code := TUIMain(ctx, []string{"-c", path}, &out, &errb)
	want := "profdeck tui: host sim: quick settings where the campaign and the flags leave the default: " +
		"macro.requests 16, macro.output_len 64, macro.warmup 2, sim.load_time 20s\n"
	if code != 1 || !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q: want exit 1 and stderr to start with %q", code, errb.String(), want)
	}
}

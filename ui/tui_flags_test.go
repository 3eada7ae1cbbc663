package ui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profdeck tui --loadgen and --loadgen-hosts are checked as the campaign's
// keys are: a bad value is one line and exit 2, before any host is opened.
func TestTUILoadgenFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profdeck.yaml")
	if err := os.WriteFile(path, []byte("host: sim\nmacro:\n  loadgen: host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--loadgen", "gpu"}, []string{"--loadgen: must be here or host"}},
		{[]string{"--loadgen-hosts", "gen1:x"}, []string{"--loadgen-hosts", "gen1:x"}},
		// The flag sets macro.loadgen.hosts: beside mode host, refused.
		{[]string{"--loadgen-hosts", "gen1:2"}, []string{"mode host and hosts together"}},
	} {
		var out, errb bytes.Buffer
		code := TUIMain(context.Background(), append([]string{"-c", path}, c.args...), &out, &errb)
		line := strings.TrimSpace(errb.String())
		for _, w := range c.want {
			if code != 2 || !strings.Contains(line, w) || strings.Contains(line, "\n") {
				t.Errorf("%v: exit %d, stderr %q: want one line with %q and exit 2", c.args, code, line, w)
			}
		}
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

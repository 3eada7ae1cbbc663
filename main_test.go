package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// profdeck --help, -h and help list the commands (exit 0); the cockpit's
// own flags are `profdeck tui -h`.
func TestHelpListsCommands(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{arg}, &out, &errb)
		if code != 0 || !strings.Contains(out.String(), "commands:") || !strings.Contains(out.String(), "  sweep ") {
			t.Errorf("profdeck %s: exit %d, stdout %q, stderr %q: want the command list, exit 0", arg, code, out.String(), errb.String())
		}
	}
}

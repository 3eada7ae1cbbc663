// Package macro is the macro phase: a load generator that sweeps concurrency against an OpenAI-compatible server.
package macro

import (
	"context"
	"fmt"
	"io"
)

// SweepMain is a headless command (not built yet).
func SweepMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

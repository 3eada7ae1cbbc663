// Package servermetrics reads a vLLM server's Prometheus /metrics into the
// figures the macro phase shows beside the client's own.
package servermetrics

import (
	"context"
	"fmt"
	"io"
)

// ParseMain is a headless command (not built yet).
func ParseMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

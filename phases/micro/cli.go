// Package micro is the micro phase: the model's decode-step GEMMs timed on the GPU host.
package micro

import (
	"context"
	"fmt"
	"io"
)

// Main is a headless command (not built yet).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

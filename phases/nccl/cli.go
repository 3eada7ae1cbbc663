// Package nccl is the NCCL phase: a decode step's collectives timed on the GPU host.
package nccl

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

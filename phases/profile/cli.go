// Package profile is the profile phase: a torch profile of the serving engine, summarised.
package profile

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

// ParseTableMain is a headless command (not built yet).
func ParseTableMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

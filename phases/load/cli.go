// Package load is the Server & Load phase: weight loading per GPU, stalls and failures, the server's lifecycle.
package load

import (
	"context"
	"fmt"
	"io"
)

// LoadMain is a headless command (not built yet).
func LoadMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

// ParseLogMain is a headless command (not built yet).
func ParseLogMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

// ParseSMIMain is a headless command (not built yet).
func ParseSMIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

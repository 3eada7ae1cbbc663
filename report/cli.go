package report

import (
	"context"
	"fmt"
	"io"
)

// ReportMain is a headless command (not built yet).
func ReportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

// CompareMain is a headless command (not built yet).
func CompareMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

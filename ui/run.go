// Package ui is the cockpit: a root bubbletea model that routes messages to
// one pane per phase and lays them out with a header and a status bar.
package ui

import (
	"context"
	"fmt"
	"io"
)

// DemoMain runs the cockpit on the simulated deployment.
func DemoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: demo is not built yet")
	return 2
}

// TUIMain runs the cockpit for a campaign file.
func TUIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: tui is not built yet")
	return 2
}

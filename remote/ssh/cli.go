// Package ssh is the SSH implementation of remote.Host.
package ssh

import (
	"context"
	"fmt"
	"io"
)

// TailMain is a headless command (not built yet).
func TailMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

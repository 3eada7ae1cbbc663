package campaign

import (
	"context"
	"fmt"
	"io"
)

// InitMain is a headless command (not built yet).
func InitMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "profdeck: this command is not built yet")
	return 2
}

package headless_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// runCLI runs a command with a deadline and returns its exit code and
// outputs.
func runCLI(t *testing.T, main func(context.Context, []string, io.Writer, io.Writer) int, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := main(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

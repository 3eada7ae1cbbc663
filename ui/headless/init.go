package headless

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/profdeck/profdeck/report/campaign"
)

const initUsage = `usage: profdeck init [FILE] [--force]

Writes a commented example campaign file (default ./profdeck.yaml) with
every section and its defaults. An existing file is kept unless --force.`

// InitMain is `profdeck init [FILE] [--force]`.
func InitMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	path, force := "", false
	for _, a := range args {
		switch a {
		case "--force", "-force", "-f":
			force = true
		case "-h", "--help", "-help":
			fmt.Fprintln(stdout, initUsage)
			return 0
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(stderr, "profdeck init: unknown flag %s\n%s\n", a, initUsage)
				return 2
			}
			if path != "" {
				fmt.Fprintf(stderr, "profdeck init: one file at most (got %s and %s)\n", path, a)
				return 2
			}
			path = a
		}
	}
	if path == "" {
		path = campaign.DefaultPath
	}
	if err := campaign.WriteExample(path, force); err != nil {
		fmt.Fprintf(stderr, "profdeck init: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: a campaign on the built-in simulated deployment (host: sim).\n", path)
	fmt.Fprintln(stdout, "Set host and server.launch for your GPU server, then run: profdeck tui -c "+path)
	return 0
}

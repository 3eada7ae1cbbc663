package headless

import (
	"context"
	"fmt"
	"io"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/remote/localfs"
)

const initUsage = `profdeck init [FILE] [--force]

Writes a commented example campaign file (default ./profdeck.yaml) with
every section and its defaults. An existing file is kept unless --force.`

// InitMain is `profdeck init [FILE] [--force]`.
func InitMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("init", initUsage, stdout, stderr)
	var force bool
	c.Flags.BoolVar(&force, "force", false, "replace an existing file")
	c.Flags.BoolVar(&force, "f", false, "short for --force")
	pos, err := c.parseFiles(args, 0, 1)
	if err != nil {
		return c.Exit(ctx, err)
	}
	path := campaign.DefaultPath
	if len(pos) == 1 {
		path = pos[0]
	}
	if err := localfs.CheckOutput(path, true); err != nil {
		return c.Exit(ctx, BadInput("%s: %v", path, err))
	}
	if err := campaign.WriteExample(path, force); err != nil {
		return c.Exit(ctx, err)
	}
	fmt.Fprintf(stdout, "wrote %s: a campaign on the built-in simulated deployment (host: sim).\n", path)
	fmt.Fprintln(stdout, "Next: profdeck run -c "+path+" (the whole campaign on it, then the notebook);")
	fmt.Fprintln(stdout, "for your GPU server set host and server.launch first, and check it with: profdeck doctor -c "+path)
	return c.Exit(ctx, nil)
}

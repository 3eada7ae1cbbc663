// Package hosts turns a host name from the command line or the campaign file
// ("sim", "local", or an SSH target) into a remote.Host.
package hosts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/sim"
)

// Options are the SSH settings that apply when the host is an SSH target.
type Options struct {
	Identity         string
	KnownHosts       string
	SSHConfig        string
	AcceptNewHostKey bool
	// Prompt asks the operator a question (host key, passphrase); nil when headless.
	Prompt func(question string, secret bool) (string, error)
	// Sim configures the simulated deployment when the host is "sim".
	Sim sim.Options
	// SimNodes is how many simulated nodes "sim" stands for in OpenNodes
	// (0 or 1: one); SimFaultNode the one Sim's stall or failure applies
	// to (-1: every node).
	SimNodes, SimFaultNode int
}

// Open returns the host named by spec: "sim" (the built-in simulated
// deployment, started here and stopped by its Close), "local" (this
// machine), or an SSH target ([user@]host[:port] or a ~/.ssh/config alias).
func Open(ctx context.Context, spec string, opt Options) (remote.Host, error) {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "":
		return nil, &remote.SpecError{Err: errors.New("no host given: use sim, local or an SSH target")}
	case "local", "localhost":
		return local.New(), nil
	case "sim":
		d, err := sim.Start(ctx, opt.Sim)
		if err != nil {
			// Never a typed nil inside the interface.
			return nil, fmt.Errorf("host sim: %w", err)
		}
		return d, nil
	}
	h, err := openSSH(ctx, spec, opt)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Package hosts turns a host name from the command line or the campaign file
// ("sim", "local", or an SSH target) into a remote.Host.
package hosts

import (
	"context"
	"fmt"

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
}

// Open returns the host named by spec.
func Open(ctx context.Context, spec string, opt Options) (remote.Host, error) {
	switch spec {
	case "":
		return nil, fmt.Errorf("no host given: use sim, local or an SSH target")
	case "local", "localhost":
		return local.New(), nil
	case "sim":
		return sim.Start(ctx, opt.Sim)
	}
	return openSSH(ctx, spec, opt)
}

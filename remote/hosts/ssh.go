package hosts

import (
	"context"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh"
)

// openSSH connects to an SSH target: an ~/.ssh/config alias or
// [user@]host[:port]. The host reconnects by itself and reports its
// connection state (remote.StateReporter).
func openSSH(ctx context.Context, spec string, opt Options) (remote.Host, error) {
	h, err := ssh.Dial(ctx, spec, ssh.Options{
		Identity:         opt.Identity,
		KnownHosts:       opt.KnownHosts,
		SSHConfig:        opt.SSHConfig,
		AcceptNewHostKey: opt.AcceptNewHostKey,
		Prompt:           opt.Prompt,
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

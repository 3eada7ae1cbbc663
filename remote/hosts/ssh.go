package hosts

import (
	"context"
	"fmt"

	"github.com/profdeck/profdeck/remote"
)

// openSSH connects to an SSH target.
func openSSH(ctx context.Context, spec string, opt Options) (remote.Host, error) {
	return nil, fmt.Errorf("host %q: SSH targets are not supported yet", spec)
}

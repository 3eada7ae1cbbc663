// Package sim is the simulated deployment: an in-process stand-in for an
// 8-GPU server running vLLM, used by `profdeck demo` and by tests.
package sim

import (
	"context"
	"errors"

	"github.com/profdeck/profdeck/remote"
)

// Options configure the simulated deployment.
type Options struct{}

// Deployment is the simulated host.
type Deployment struct{ remote.Host }

// Start starts the simulated deployment.
func Start(ctx context.Context, opt Options) (*Deployment, error) {
	return nil, errors.New("sim: not built yet")
}

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

// Start starts the simulated deployment.
func Start(ctx context.Context, opt Options) (remote.Host, error) {
	return nil, errors.New("sim: not built yet")
}

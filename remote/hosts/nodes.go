package hosts

import (
	"context"
	"errors"
	"fmt"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

// OpenNodes opens every node of a deployment on several hosts, the head
// first. specs are the campaign's hosts; a lone "sim" with opt.SimNodes > 1
// is that many simulated nodes (opt.SimFaultNode, when ≥ 0, the one that
// stalls or fails). Nodes opened before an error are closed again.
func OpenNodes(ctx context.Context, specs []string, opt Options) ([]remote.Host, error) {
	if len(specs) == 1 && specs[0] == "sim" && opt.SimNodes > 1 {
		ds, err := sim.StartNodes(ctx, opt.Sim, opt.SimNodes, opt.SimFaultNode)
		if err != nil {
			return nil, fmt.Errorf("host sim: %w", err)
		}
		out := make([]remote.Host, len(ds))
		for i, d := range ds {
			out[i] = d
		}
		return out, nil
	}
	var out []remote.Host
	for _, spec := range specs {
		h, err := Open(ctx, spec, opt)
		if err != nil {
			CloseAll(out)
			return nil, fmt.Errorf("host %s: %w", spec, err)
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, &remote.SpecError{Err: errors.New("no host given: use sim, local or an SSH target")}
	}
	return out, nil
}

// CloseAll closes every host.
func CloseAll(hs []remote.Host) {
	for _, h := range hs {
		_ = h.Close()
	}
}

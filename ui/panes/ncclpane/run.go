package ncclpane

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// start runs the NCCL phase with the campaign's model and TP (for the
// step's all-reduce count and sizes), NCCL.NProc ranks per node under
// NCCL.Torchrun on every node of the deployment (as the campaign run and
// `profdeck nccl` do), at NCCL.Batch. force skips the busy-GPU check.
func (m *Model) start(force bool) tea.Cmd {
	spec, tp, cmd, ok := m.r.Begin()
	if !ok {
		return cmd
	}
	c := m.d.Campaign
	m.res = nccl.Result{}
	m.body.Reset()
	cfg := c.NCCLConfig()
	cfg.Host, cfg.Force = m.d.Host, force
	label := fmt.Sprintf("%s TP%d · %d ranks", spec, tp, cfg.NProc)
	if len(m.d.Nodes) > 1 {
		cfg.Nodes = m.d.Nodes
		label += fmt.Sprintf(" × %d nodes", len(cfg.Nodes))
	}
	return m.r.Launch(label, gpupane.Job{
		Spec:    spec,
		Options: c.PlanOptions(c.NCCL.Batch),
		Run: func(ctx context.Context, p model.Plan, em *phases.Emitter) error {
			cfg.Plan = p
			return nccl.Run(ctx, cfg, em)
		},
	})
}

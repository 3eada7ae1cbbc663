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
// step's all-reduce count and sizes), NCCL.NProc ranks under NCCL.Torchrun,
// at NCCL.Batch. force skips the busy-GPU check.
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
	nproc := cfg.NProc
	return m.r.Launch(fmt.Sprintf("%s TP%d · %d ranks", spec, tp, nproc), gpupane.Job{
		Spec:    spec,
		Options: c.PlanOptions(c.NCCL.Batch),
		Run: func(ctx context.Context, p model.Plan, em *phases.Emitter) error {
			cfg.Plan = p
			return nccl.Run(ctx, cfg, em)
		},
	})
}

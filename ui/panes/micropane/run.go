package micropane

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// start runs the micro phase with the campaign's model, TP/EP, batch sizes
// and Python prefix. force skips the busy-GPU check.
func (m *Model) start(force bool) tea.Cmd {
	spec, tp, cmd, ok := m.r.Begin()
	if !ok {
		return cmd
	}
	c := m.d.Campaign
	m.res, m.mi = micro.Result{}, 0
	m.rows.Reset()
	label := fmt.Sprintf("%s TP%d", spec, tp)
	if c.Model.EP {
		label += " EP"
	}
	cfg := c.MicroConfig()
	cfg.Host, cfg.Force = m.d.Host, force
	return m.r.Launch(label, gpupane.Job{
		Spec:    spec,
		Options: c.PlanOptions(c.Micro.Batch),
		Run: func(ctx context.Context, p model.Plan, em *phases.Emitter) error {
			cfg.Plan = p
			return micro.Run(ctx, cfg, em)
		},
	})
}

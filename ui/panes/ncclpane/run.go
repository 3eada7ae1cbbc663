package ncclpane

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/ui/panes/gpubench"
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
	nproc := c.NCCL.NProc
	if nproc < 1 {
		nproc = tp
	}
	m.res = nccl.Result{}
	m.body.Reset()
	cfg := nccl.Config{Host: m.d.Host, Torchrun: c.NCCL.Torchrun, Python: innerPython(c.Micro.Python), NProc: nproc, Batch: c.NCCL.Batch, Force: force}
	return m.r.Launch(fmt.Sprintf("%s TP%d · %d ranks", spec, tp, nproc), gpubench.Job{
		Spec:    spec,
		Options: model.Options{TP: tp, EP: c.Model.EP, Batch: c.NCCL.Batch},
		Params: func(p model.Plan) map[string]any {
			return map[string]any{"model": spec, "tp": tp, "nproc": nproc, "torchrun": cfg.Torchrun, "batch": p.Batch,
				"allreduce_per_step": p.AllReduce.PerStep}
		},
		Run: func(ctx context.Context, p model.Plan, em *phases.Emitter) error {
			cfg.Plan = p
			return nccl.Run(ctx, cfg, em)
		},
	})
}

// innerPython is the interpreter torchrun starts for each rank: the last
// word of the campaign's Python prefix ("docker exec -i vllm python3" gives
// python3).
func innerPython(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) == 0 {
		return "python3"
	}
	return f[len(f)-1]
}

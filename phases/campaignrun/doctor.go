package campaignrun

import (
	"context"
	"fmt"
	"slices"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor"
)

// plan is the run's steps: Plan's, less the doctor step when there is
// nothing to check.
func (r *runner) plan() []string {
	p := StepsOf(r.cfg.Order, r.cfg.Phases)
	if r.cfg.Doctor == nil {
		p = slices.DeleteFunc(p, func(s string) bool { return s == Doctor })
	}
	return p
}

// needOf is what the steps to do need from the host.
func needOf(todo map[string]bool, order string) doctor.Need {
	profiled := todo[Restart] || order == OrderOneLoad && todo[Serve] && todo[Profile]
	return doctor.Need{Serve: todo[Serve] || todo[Restart], Restart: profiled, Sweep: todo[Macro], Micro: todo[Micro],
		NCCL: todo[NCCL], Profile: todo[Restart] || todo[Profile]}
}

// doctor checks what the steps to do need on the host. A check that fails
// for one of them ends the run here, before the server is started or
// loaded: every later step is skipped with the reason.
func (r *runner) doctor(ctx context.Context) (string, string) {
	cfg := *r.cfg.Doctor
	cfg.Need = r.need
	res, err := doctor.Run(ctx, cfg, r.em)
	if err != nil {
		return phases.StepFailed, errText(err)
	}
	if res.Fails > 0 {
		r.endReason = fmt.Sprintf("the doctor's %s check(s) failed: profdeck doctor gives each with its fix (--skip-doctor runs anyway)", res.Failed())
		return phases.StepFailed, fmt.Sprintf("%d of %d checks failed: %s", res.Fails, len(res.Checks), res.Failed())
	}
	return phases.StepDone, fmt.Sprintf("%d checks in %.1f s, %d warning(s)", len(res.Checks), res.Seconds, res.Warns)
}

package headless

import (
	"context"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// sweepEngine is the sweep's engine (campaignrun.SweepEngine), over the
// campaign's load agents when it names some; release closes their hosts.
func sweepEngine(ctx context.Context, cfg macro.Config, camp *campaign.Campaign, opt onhost.Options) (macro.Engine, func(), error) {
	members, release, err := camp.OpenAgents(ctx, opt.Host, opt.MetricsURL)
	if err != nil {
		return nil, nil, err
	}
	e, err := campaignrun.SweepEngine(cfg, camp.Macro.Loadgen.Mode, opt, members)
	if err != nil {
		release()
		return nil, nil, &BadInputError{Err: err}
	}
	return e, release, nil
}

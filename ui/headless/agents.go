package headless

import (
	"context"
	"fmt"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
)

// openAgents opens the hosts of the campaign's macro.loadgen.hosts, each
// once: one member per agent process (gen1#0, gen1#1, …). An agent host
// named as the campaign's host is h itself. The caller closes what it
// returns.
func openAgents(ctx context.Context, camp *campaign.Campaign, h remote.Host, metricsURL string) ([]fleet.Member, func(), error) {
	opened := map[string]remote.Host{camp.Host: h}
	var own []remote.Host
	closeAll := func() { hosts.CloseAll(own) }
	var members []fleet.Member
	for _, name := range fleet.Slots(camp.Macro.Loadgen.Hosts) {
		ah, ok := opened[name]
		if !ok {
			var err error
			if ah, err = hosts.Open(ctx, name, camp.HostOptions()); err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("load agent host %s: %w", name, err)
			}
			opened[name] = ah
			own = append(own, ah)
		}
		members = append(members, fleet.Member{Name: name, Opt: onhost.Options{Host: ah, MetricsURL: metricsURL}})
	}
	return members, closeAll, nil
}

// sweepEngine is the sweep's engine: over the campaign's load agents when
// it names some, else where macro.loadgen.mode says.
func sweepEngine(ctx context.Context, cfg macro.Config, camp *campaign.Campaign, opt onhost.Options) (macro.Engine, func(), error) {
	if len(camp.Macro.Loadgen.Hosts) == 0 {
		sw, err := onhost.NewEngine(cfg, camp.Macro.Loadgen.Mode, opt)
		if err != nil {
			return nil, nil, &BadInputError{Err: err}
		}
		return sw, func() {}, nil
	}
	members, closeAll, err := openAgents(ctx, camp, opt.Host, opt.MetricsURL)
	if err != nil {
		return nil, nil, err
	}
	e, err := fleet.NewEngine(cfg, members)
	if err != nil {
		closeAll()
		return nil, nil, &BadInputError{Err: err}
	}
	return e, closeAll, nil
}

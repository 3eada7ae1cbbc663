package campaign

import (
	"context"
	"fmt"

	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
)

// OpenAgents opens the hosts of macro.loadgen.hosts, each once: one member
// per agent process (gen1#0, gen1#1, …), whose /metrics is metricsURL. An
// agent host named as the campaign's host is h itself. None when the
// campaign names no agents. The caller calls release once the sweep is
// over.
func (c *Campaign) OpenAgents(ctx context.Context, h remote.Host, metricsURL string) (members []fleet.Member, release func(), err error) {
	opened := map[string]remote.Host{c.Host: h}
	var own []remote.Host
	release = func() { hosts.CloseAll(own) }
	for _, name := range fleet.Slots(c.Macro.Loadgen.Hosts) {
		ah, ok := opened[name]
		if !ok {
			if ah, err = hosts.Open(ctx, name, c.HostOptions()); err != nil {
				release()
				return nil, nil, fmt.Errorf("load agent host %s: %w", name, err)
			}
			opened[name] = ah
			own = append(own, ah)
		}
		members = append(members, fleet.Member{Name: name, Opt: onhost.Options{Host: ah, MetricsURL: metricsURL}})
	}
	return members, release, nil
}

// WithAgents opens the campaign's load agents (OpenAgents) for the
// campaign run cfg, its sweep then run over them; release once the run
// is over.
func (c *Campaign) WithAgents(ctx context.Context, cfg *campaignrun.Config) (release func(), err error) {
	members, release, err := c.OpenAgents(ctx, cfg.Host, cfg.MetricsURL)
	if err != nil {
		return nil, err
	}
	cfg.Agents = members
	return release, nil
}

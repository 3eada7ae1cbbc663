package headless

import (
	"net/http"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report/campaign"
)

// RunConfig maps the campaign to the campaign run's configuration: each
// phase's settings as its pane and its command take them. It fails when the
// campaign names no model the micro and NCCL plans can be built for.
func RunConfig(c *campaign.Campaign, host remote.Host, apiKey string) (run.Config, error) {
	spec, err := c.ModelSpec()
	if err != nil {
		return run.Config{}, err
	}
	srv := &load.Server{Host: host, Settings: c.ServerSettings()}
	client := &http.Client{Transport: &http.Transport{DialContext: host.DialContext, MaxIdleConns: 2}}
	sweep := c.SweepConfig(apiKey)
	sweep.Dial = host.DialContext
	sweep.Scraper = servermetrics.NewScraper(c.MetricsURL(), client)
	cfg := run.Config{
		Host:        host,
		Identity:    Identity(c),
		Server:      srv,
		Watch:       c.LoadConfig(),
		Version:     c.Server.Version,
		ProfilerDir: c.Server.ProfilerDir,
		Sweep:       sweep,
		ModelSpec:   spec,
		MicroPlan:   c.PlanOptions(c.Micro.Batch),
		Micro:       c.MicroConfig(),
		NCCLPlan:    c.PlanOptions(c.NCCL.Batch),
		NCCL:        c.NCCLConfig(),
		Profile:     c.ProfileConfig(apiKey),
		Leave:       c.Run.LeaveServer,
	}
	return cfg, nil
}

// Identity is what the campaign's steps are done for.
func Identity(c *campaign.Campaign) phases.RunIdentity {
	name := c.Model.Name
	if name == "" {
		name = c.Model.Preset
	}
	if name == "" {
		name = c.Model.Config
	}
	return phases.RunIdentity{Model: name, TP: max(c.Model.TP, 1), Launch: load.Redacted(strings.TrimSpace(c.Server.Launch))}
}

// SimOptions is the simulated deployment the campaign's sim section asks for.
func SimOptions(c *campaign.Campaign) sim.Options {
	return sim.Options{LoadTime: c.Sim.LoadTime.Duration, StallAtGiB: c.Sim.StallAtGiB,
		ProfilerStallAtGiB: c.Sim.StallWithProfilerAtGiB, FailWith: c.Sim.Fail, LogPath: c.Server.Log}
}

// HostOptions are the SSH and sim settings of the campaign.
func HostOptions(c *campaign.Campaign) hosts.Options {
	o := c.HostOptions()
	o.Sim = SimOptions(c)
	return o
}

package campaign

import (
	"net/http"

	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
)

// This file maps the campaign to what depends on the opened hosts: the
// host options that open them, and the engines' configurations that reach
// the server through them.

// HostOptions are the campaign's settings for hosts.Open: the SSH section,
// and the sim section for the simulated deployment (host: sim). Every
// front-end opens its hosts with them; a command adjusts only what is its
// own (a prompt for host keys, a simulated server that serves at once).
func (c *Campaign) HostOptions() hosts.Options {
	return hosts.Options{Identity: c.SSH.Identity, KnownHosts: c.SSH.KnownHosts,
		SSHConfig: c.SSH.Config, AcceptNewHostKey: c.SSH.AcceptNewHostKey,
		SimNodes: c.Sim.Nodes, SimFaultNode: c.SimFaultNode(), Sim: c.SimOptions()}
}

// SweepThrough is the sweep's configuration reaching the server through
// host (nil: directly): its requests and its /metrics scraper (none when
// server.metrics_url is off) dial through it, and the host's GPUs are
// sampled during each level. release closes the scraper's
// idle connection once the sweep has ended.
func (c *Campaign) SweepThrough(host remote.Host, apiKey string) (cfg macro.Config, release func()) {
	cfg = c.SweepConfig(apiKey)
	client := &http.Client{Timeout: servermetrics.DefaultTimeout}
	if host != nil {
		cfg.Dial, cfg.Host = host.DialContext, host
		cfg.GPU = gputel.New(host, gputel.Options{})
		client.Transport = &http.Transport{DialContext: host.DialContext, MaxIdleConns: 2}
	}
	if u := c.MetricsURL(); u != "" {
		cfg.Scraper = servermetrics.NewScraper(u, client)
	}
	return cfg, client.CloseIdleConnections
}

// CampaignRunConfigOn is the campaign's run configuration on its nodes (the head
// first, one for a single host): the campaign's mapping, with the server
// started and stopped on every node, the sweep reaching the server through
// the head, and on several nodes every node's load followed.
func (c *Campaign) CampaignRunConfigOn(nodes []remote.Host, apiKey string) (campaignrun.Config, error) {
	cfg, err := c.CampaignRunConfig(apiKey)
	if err != nil {
		return campaignrun.Config{}, err
	}
	host := nodes[0]
	cfg.Host = host
	cfg.Server = c.NodeServer(nodes)
	sweep, _ := c.SweepThrough(host, apiKey)
	// The sweep's host too, so that its path says the load went through
	// the host's SSH connection, and the verdict can read the server's log.
	cfg.Sweep.Dial, cfg.Sweep.Host, cfg.Sweep.Scraper, cfg.Sweep.GPU = sweep.Dial, sweep.Host, sweep.Scraper, sweep.GPU
	dc := c.DoctorConfig(host, apiKey)
	cfg.Doctor = &dc
	if len(nodes) > 1 {
		cfg.Nodes = c.LoadNodes(nodes)
		cfg.NCCL.Nodes = nodes
	}
	return cfg, nil
}

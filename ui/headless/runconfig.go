package headless

import (
	"net/http"

	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/report/campaign"
)

// RunConfig is the campaign's run configuration on host: the campaign's
// mapping, with the server, the sweep's dial and its /metrics scraper
// reaching the server through the host.
func RunConfig(c *campaign.Campaign, host remote.Host, apiKey string) (run.Config, error) {
	cfg, err := c.RunConfig(apiKey)
	if err != nil {
		return run.Config{}, err
	}
	client := &http.Client{Transport: &http.Transport{DialContext: host.DialContext, MaxIdleConns: 2}}
	cfg.Host = host
	cfg.Server = &load.Server{Host: host, Settings: c.ServerSettings()}
	cfg.Sweep.Dial = host.DialContext
	cfg.Sweep.Scraper = servermetrics.NewScraper(c.MetricsURL(), client)
	return cfg, nil
}

// RunConfigNodes is RunConfig on a deployment of several nodes (the head
// first): the server started and stopped on every node, every node's load
// followed.
func RunConfigNodes(c *campaign.Campaign, nodes []remote.Host, apiKey string) (run.Config, error) {
	cfg, err := RunConfig(c, nodes[0], apiKey)
	if err != nil || len(nodes) < 2 {
		return cfg, err
	}
	cfg.Server = c.NodeServer(nodes)
	cfg.Nodes = c.LoadNodes(nodes)
	cfg.NCCL.Nodes = nodes
	return cfg, nil
}

// HostOptions are the SSH and sim settings of the campaign.
func HostOptions(c *campaign.Campaign) hosts.Options {
	o := c.HostOptions()
	o.Sim = c.SimOptions()
	return o
}

package headless

import (
	"net/http"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
)

// RunConfig is the campaign's run configuration on its nodes (the head
// first, one for a single host): the campaign's mapping, with the server
// started and stopped on every node, the sweep's dial and its /metrics
// scraper reaching the server through the head, and on several nodes every
// node's load followed.
func RunConfig(c *campaign.Campaign, nodes []remote.Host, apiKey string) (run.Config, error) {
	cfg, err := c.RunConfig(apiKey)
	if err != nil {
		return run.Config{}, err
	}
	host := nodes[0]
	client := &http.Client{Transport: &http.Transport{DialContext: host.DialContext, MaxIdleConns: 2}}
	cfg.Host = host
	cfg.Server = c.NodeServer(nodes)
	cfg.Sweep.Dial = host.DialContext
	cfg.Sweep.Scraper = servermetrics.NewScraper(c.MetricsURL(), client)
	cfg.Sweep.GPU = gputel.New(host, gputel.Options{})
	if len(nodes) > 1 {
		cfg.Nodes = c.LoadNodes(nodes)
		cfg.NCCL.Nodes = nodes
	}
	return cfg, nil
}

// HostOptions are the SSH and sim settings of the campaign.
func HostOptions(c *campaign.Campaign) hosts.Options {
	o := c.HostOptions()
	o.Sim = c.SimOptions()
	return o
}

package headless

import (
	"net/http"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/profile"
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
	spec, err := model.Spec(c.Model.Config, c.Model.Preset, c.Model.Name)
	if err != nil {
		return run.Config{}, err
	}
	tp := max(c.Model.TP, 1)
	srv := &load.Server{Host: host, Settings: c.Server}
	client := &http.Client{Transport: &http.Transport{DialContext: host.DialContext, MaxIdleConns: 2}}
	cfg := run.Config{
		Host:     host,
		Identity: Identity(c),
		Server:   srv,
		Watch: load.Config{LogPath: srv.LogPath(), HealthURL: load.HealthURL(c.Server.URL), ExpectGiB: c.Model.ExpectGiB,
			StallAfter: c.Load.StallAfter.Duration, Poll: c.Load.PollInterval.Duration},
		Version:     c.Server.Version,
		ProfilerDir: c.Server.ProfilerDir,
		Sweep: macro.Config{URL: c.Server.URL, API: c.Macro.API, Concurrency: c.Macro.Concurrency,
			Requests: c.Macro.Requests, Duration: c.Macro.Duration.Duration, Warmup: c.Macro.Warmup,
			InputLen: c.Macro.InputLen, OutputLen: c.Macro.OutputLen, Rate: c.Macro.Rate,
			StopAtPlateau: c.Macro.StopAtPlateau, NoPreflight: c.Macro.NoPreflight, APIKey: apiKey, Dial: host.DialContext,
			Scraper: servermetrics.NewScraper(metricsURL(c.Server.URL, c.Server.MetricsURL), client)},
		ModelSpec: spec,
		MicroPlan: model.Options{TP: tp, EP: c.Model.EP, Batch: c.Micro.Batch},
		Micro:     micro.Config{Python: c.Micro.Python},
		NCCLPlan:  model.Options{TP: tp, EP: c.Model.EP, Batch: c.NCCL.Batch},
		NCCL: nccl.Config{Torchrun: c.NCCL.Torchrun, Python: innerPython(c.Micro.Python),
			NProc: nprocOf(c.NCCL.NProc, tp), Batch: c.NCCL.Batch},
		Profile: profile.Config{URL: c.Server.URL, Model: c.Model.Name, API: c.Macro.API, APIKey: apiKey,
			ProfilerDir: c.Server.ProfilerDir, Requests: c.Profile.Requests,
			InputLen: c.Macro.InputLen, OutputLen: c.Macro.OutputLen},
		Leave: c.Run.LeaveServer,
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
	return hosts.Options{Identity: c.SSH.Identity, KnownHosts: c.SSH.KnownHosts, SSHConfig: c.SSH.Config,
		AcceptNewHostKey: c.SSH.AcceptNewHostKey, Sim: SimOptions(c)}
}

func nprocOf(n, tp int) int {
	if n < 1 {
		return tp
	}
	return n
}

// metricsURL is the configured /metrics address, or the server URL's.
func metricsURL(server, configured string) string {
	if configured != "" {
		return configured
	}
	return strings.TrimSuffix(strings.TrimRight(server, "/"), "/v1") + "/metrics"
}

// innerPython is the interpreter torchrun starts for each rank: the last
// word of the campaign's Python prefix.
func innerPython(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) == 0 {
		return "python3"
	}
	return f[len(f)-1]
}

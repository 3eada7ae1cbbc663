package campaign

import (
	"os"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote"
)

// This file is the one mapping from the campaign to each engine's
// configuration; the cockpit's panes and the headless commands both use it.
// The host is the caller's to set: the campaign names it, the front-end
// opens it.

// APIKeyEnv is the environment variable holding the server's API key.
func (c *Campaign) APIKeyEnv() string {
	if c.Server.APIKeyEnv != "" {
		return c.Server.APIKeyEnv
	}
	return "OPENAI_API_KEY"
}

// APIKey is the server's API key, read from the campaign's variable.
func (c *Campaign) APIKey() string { return os.Getenv(c.APIKeyEnv()) }

// ServerSettings are how the load phase launches, follows and stops the
// serving process.
func (c *Campaign) ServerSettings() load.Settings {
	s := c.Server
	return load.Settings{Launch: s.Launch, Log: c.NodeLog(0), Container: s.Container, Env: s.Env, ProfilerDir: s.ProfilerDir,
		WorkDir: DefaultWorkDir}
}

// NewServer is the server's lifecycle on host: its settings and the
// bounds of a stop.
func (c *Campaign) NewServer(host remote.Host) *load.Server {
	return &load.Server{Host: host, Settings: c.ServerSettings(), StopTimeout: DefaultServerStopTimeout,
		ReleasedBelowGiB: DefaultReleasedBelowGiB}
}

// LoadConfig is the load watcher's configuration (without its host).
func (c *Campaign) LoadConfig() load.Config {
	log := c.Server.Log
	if log == "" {
		log = DefaultLogPath
	}
	return load.Config{LogPath: log, HealthURL: load.HealthURL(c.Server.URL), ExpectGiB: c.Model.ExpectGiB,
		StallAfter: c.Load.StallAfter.Duration, Poll: c.Load.PollInterval.Duration,
		SnapshotEvery: DefaultSnapshotEvery, DiagnoseWindow: DefaultDiagnoseWindow,
		PIDFile: log + ".pid", Container: c.Server.Container, // the pid file Server.Start keeps
		Engine: c.ServerEngine()}
}

// SweepConfig is the macro sweep's configuration from the server and macro
// sections, with the given API key (without dialer or scraper): complete,
// with the defaults of what the campaign file has no key for (the request
// timeout, the client-bound lag, a rate search's first rung).
func (c *Campaign) SweepConfig(apiKey string) macro.Config {
	m := c.Macro
	searchFrom := m.Rate
	if searchFrom <= 0 {
		searchFrom = DefaultSearchRate
	}
	return macro.Config{URL: c.Server.URL, API: m.API, Concurrency: m.Concurrency, Requests: m.Requests,
		Timeout: DefaultRequestTimeout, ClientBoundLag: DefaultClientBoundLag, SearchFrom: searchFrom,
		Duration: m.Duration.Duration, Warmup: m.Warmup, InputLen: m.InputLen, OutputLen: m.OutputLen,
		Rate: m.Rate, StopAtPlateau: m.StopAtPlateau, NoPreflight: m.NoPreflight, APIKey: apiKey,
		SLO: m.SLO, Repeat: m.Repeat, Limits: c.ServerLimits(), ServerLog: c.LoadConfig().LogPath, Dataset: m.Dataset, DatasetFile: m.DatasetFile,
		DatasetMax: m.DatasetMax, RangeRatio: m.RangeRatio, PrefixLen: m.PrefixLen, Deployment: new(c.Deployment()),
		Search: m.Search, SearchTolerance: m.SearchTolerance, Arrivals: m.Arrivals, Burstiness: m.Burstiness, LatencyFrom: m.LatencyFrom,
		MaxInFlight: c.openLoopCap(), TraceSpeed: m.TraceSpeed, TraceStart: m.TraceStart.Duration, TraceDuration: m.TraceDuration.Duration,
		ThinkTime: m.ThinkTime.Duration, SessionHeader: m.SessionHeader}
}

// openLoopCap is the open loop's cap on requests in flight: with a rate
// (or a rate search), a concurrency given (the file's macro.concurrency,
// or --concurrency / --max-concurrency) of one value caps the requests in
// flight, as vLLM bench serve's --max-concurrency with --request-rate; 0
// without a rate or without a concurrency given.
func (c *Campaign) openLoopCap() int {
	m := c.Macro
	if (m.Rate <= 0 && m.Search != phases.SearchRate) || c.Source("macro.concurrency") == "" || len(m.Concurrency) != 1 {
		return 0
	}
	return m.Concurrency[0]
}

// ServerLimits are the limits the launch command sets, for the plateau's
// verdict.
func (c *Campaign) ServerLimits() macro.Limits {
	if n := macro.MaxNumSeqsFromLaunch(c.Server.Launch); n > 0 {
		return macro.Limits{MaxNumSeqs: n, Source: "the launch command", Looked: true}
	}
	return macro.Limits{Looked: c.Server.Launch != ""}
}

// MetricsOff as server.metrics_url (or --metrics-url) reads no /metrics.
const MetricsOff = "off"

// MetricsURL is where the server's Prometheus /metrics is: the campaign's
// server.metrics_url, else the server URL's /metrics; "" when it is off.
func (c *Campaign) MetricsURL() string { return MetricsURL(c.Server.URL, c.Server.MetricsURL) }

// MetricsURL is configured when set, else server's /metrics (a trailing /v1
// dropped); "" when configured is off (no scraping).
func MetricsURL(server, configured string) string {
	switch strings.TrimSpace(configured) {
	case "":
	case MetricsOff, "none":
		return ""
	default:
		return configured
	}
	return strings.TrimSuffix(strings.TrimRight(server, "/"), "/v1") + "/metrics"
}

// ProfileConfig is a capture's configuration: the server, the profiler
// directory, the profile section's steps at C=1 and the macro section's
// lengths (without its host), with the defaults of what the campaign file
// has no key for (stop_profile's bound, the trace size summarised on the
// host and its interpreter, the kernels listed).
func (c *Campaign) ProfileConfig(apiKey string) profile.Config {
	return profile.Config{URL: c.Server.URL, Model: c.Model.Name, API: c.Macro.API, APIKey: apiKey,
		ProfilerDir: c.Server.ProfilerDir, Concurrency: []int{1}, Steps: c.Profile.Steps, Steady: true,
		InputLen: c.Macro.InputLen, OutputLen: c.Macro.OutputLen, StopTimeout: DefaultProfileStopTimeout,
		RemoteOver: DefaultProfileRemoteOver, Python: DefaultPython, Top: DefaultProfileTop}
}

// ModelSpec names the model for model.Resolve: its config file, its preset,
// or the preset guessed from the served name.
func (c *Campaign) ModelSpec() (string, error) {
	return model.Spec(c.Model.Config, c.Model.Preset, c.Model.Name)
}

// TP is the tensor-parallel size (model.tp, at least 1 once validated).
func (c *Campaign) TP() int { return max(c.Model.TP, 1) }

// PlanOptions are the decode-step plan's options for the given batch sizes.
func (c *Campaign) PlanOptions(batch []int) model.Options {
	return model.Options{TP: c.TP(), EP: c.Model.EP, Batch: batch}
}

// MicroConfig is the micro phase's configuration (without host and plan).
func (c *Campaign) MicroConfig() micro.Config {
	return micro.Config{Python: c.Micro.Python, WorkDir: DefaultWorkDir}
}

// NCCLConfig is the NCCL phase's configuration (without host and plan):
// the nccl section's launcher, ranks (default: the TP size) and batch
// sizes; each rank runs the interpreter of the micro section's Python
// prefix ("docker exec -i vllm python3" gives python3).
func (c *Campaign) NCCLConfig() nccl.Config {
	nproc := c.NCCL.NProc
	if nproc < 1 {
		nproc = max(c.TP()/c.NodeCount(), 1) // ranks per node
	}
	port := c.NCCL.MasterPort
	if port == 0 {
		port = DefaultMasterPort
	}
	return nccl.Config{Torchrun: c.NCCL.Torchrun, Python: innerPython(c.Micro.Python), NProc: nproc, Batch: c.NCCL.Batch,
		Tokens: slices.Clone(DefaultTokens), WorkDir: DefaultWorkDir, Env: c.NCCL.Env, MasterAddr: c.HeadAddr(), MasterPort: port}
}

// innerPython is the last word of a Python command prefix.
func innerPython(prefix string) string {
	f := strings.Fields(prefix)
	if len(f) == 0 {
		return DefaultPython
	}
	return f[len(f)-1]
}

// Deployment is what serves the campaign's URL, for capacity plans: the
// parallel sizes the launch command sets, else model.tp, over the
// campaign's nodes.
func (c *Campaign) Deployment() phases.Deployment {
	d := phases.Deployment{TP: c.TP(), Nodes: c.NodeCount(), Source: "the default model.tp"}
	if lineOf(c.root, "model.tp") > 0 || c.setBy["model.tp"] != "" {
		d.Source = "the campaign's model.tp"
	}
	if tp, pp, dp := macro.ParallelFromLaunch(c.Server.Launch); tp > 0 {
		d.TP, d.PP, d.DP, d.Source = tp, pp, dp, "the launch command"
	}
	d.GPUs = d.ReplicaGPUs()
	return d
}

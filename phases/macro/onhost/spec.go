// Package onhost runs the macro sweep's load generator on the GPU host
// itself (--loadgen host): this program is copied to the host (remote/selfbin),
// started there as `profdeck loadgen-agent` over the host's command channel,
// given the sweep's configuration on its stdin, and streams the sweep's
// events back on its stdout, one JSON line each. The events are decoded and
// emitted again here as the engine's own typed events, so every front-end
// shows, journals and writes them as it does a sweep run here. The load
// then reaches the server over the host's loopback, not through the SSH
// connection.
//
// The wire is JSON lines both ways. Down (stdin): the spec first, then
// steering operations; the end of stdin cancels the sweep (the agent writes
// what it measured and exits). Up (stdout): events, per-request records,
// log lines, and the result last.
package onhost

import (
	"time"

	"github.com/profdeck/profdeck/phases"

	"github.com/profdeck/profdeck/phases/macro"
)

// Spec is the part of a macro.Config that travels to the host; what a
// Config holds that cannot travel (dialer, scraper, writers, host) is made
// again on the host from it.
type Spec struct {
	URL         string        `json:"url"`
	Model       string        `json:"model,omitempty"`
	API         string        `json:"api,omitempty"`
	Concurrency []int         `json:"concurrency,omitempty"`
	Requests    int           `json:"requests,omitempty"`
	Duration    time.Duration `json:"duration,omitempty"`
	Warmup      int           `json:"warmup,omitempty"`
	// Percentiles are the extra percentiles asked for (vLLM's flags).
	Percentiles    macro.Percentiles `json:"percentiles,omitempty"`
	InputLen       int               `json:"input_len,omitempty"`
	OutputLen      int               `json:"output_len,omitempty"`
	Rate           float64           `json:"rate,omitempty"`
	StopAtPlateau  bool              `json:"stop_at_plateau,omitempty"`
	NoPreflight    bool              `json:"no_preflight,omitempty"`
	APIKey         string            `json:"api_key,omitempty"`
	Timeout        time.Duration     `json:"timeout,omitempty"`
	ClientBoundLag time.Duration     `json:"client_bound_lag,omitempty"`
	Seed           int64             `json:"seed,omitempty"`
	Limits         macro.Limits      `json:"limits"`
	ServerLog      string            `json:"server_log,omitempty"`
	SLO            string            `json:"slo,omitempty"`
	Dataset        string            `json:"dataset,omitempty"`
	DatasetFile    string            `json:"dataset_file,omitempty"` // a path on the host
	DatasetMax     int               `json:"dataset_max,omitempty"`
	RangeRatio     float64           `json:"range_ratio,omitempty"`
	PrefixLen      int               `json:"prefix_len,omitempty"`
	Repeat         int               `json:"repeat,omitempty"`
	// The open loop's schedule, latency origin and the SLO search.
	Arrivals        string  `json:"arrivals,omitempty"`
	Burstiness      float64 `json:"burstiness,omitempty"`
	LatencyFrom     string  `json:"latency_from,omitempty"`
	Search          string  `json:"search,omitempty"`
	SearchTolerance float64 `json:"search_tolerance,omitempty"`
	SearchFrom      float64 `json:"search_from,omitempty"`
	// MaxInFlight caps the open loop's requests in flight (0: no cap).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// A trace's replay: its speed, and the window cut from it.
	TraceSpeed    float64       `json:"trace_speed,omitempty"`
	TraceStart    time.Duration `json:"trace_start,omitempty"`
	TraceDuration time.Duration `json:"trace_duration,omitempty"`
	// A multi-turn dataset's think time and session header.
	ThinkTime     time.Duration `json:"think_time,omitempty"`
	SessionHeader string        `json:"session_header,omitempty"`
	// Shard of Shards: this agent's share of a schedule made once.
	Shard  int `json:"shard,omitempty"`
	Shards int `json:"shards,omitempty"`
	// Deployment is what the sweep measured (TP, PP, DP, nodes).
	Deployment *phases.Deployment `json:"deployment,omitempty"`
	// MetricsURL is the server's /metrics as the host sees it; empty: none.
	MetricsURL string `json:"metrics_url,omitempty"`
	// JSONL asks for one record per finished request; Gaps for its
	// inter-token gaps in it.
	JSONL bool `json:"jsonl,omitempty"`
	Gaps  bool `json:"gaps,omitempty"`
	// GPU asks for the host's GPUs to be sampled (phases/gputel) there.
	GPU bool `json:"gpu,omitempty"`
	// Histograms has the agent send its finished requests as HDR
	// histograms, one per metric per second, with their counts
	// (phases/macro/hdrsec), every BatchEvery and at its end.
	Histograms bool `json:"histograms,omitempty"`
	// AwaitStart has the agent, once ready, wait for its start (the
	// start operation, a time on the host's clock) before its sweep:
	// several agents given one start, each in its own clock, begin
	// together.
	AwaitStart bool `json:"await_start,omitempty"`
	// HostName is the host as the operator named it: what the agent's
	// messages call the machine it runs on.
	HostName string `json:"host_name,omitempty"`
}

// specOf is the travelling part of cfg.
func specOf(cfg macro.Config, metricsURL string) Spec {
	return Spec{URL: cfg.URL, Model: cfg.Model, API: cfg.API, Concurrency: cfg.Concurrency, Requests: cfg.Requests,
		Duration: cfg.Duration, Warmup: cfg.Warmup, InputLen: cfg.InputLen, OutputLen: cfg.OutputLen, Rate: cfg.Rate,
		StopAtPlateau: cfg.StopAtPlateau, NoPreflight: cfg.NoPreflight, APIKey: cfg.APIKey, Timeout: cfg.Timeout,
		ClientBoundLag: cfg.ClientBoundLag, Seed: cfg.Seed, Limits: cfg.Limits, ServerLog: cfg.ServerLog, SLO: cfg.SLO,
		Dataset: cfg.Dataset, DatasetFile: cfg.DatasetFile, DatasetMax: cfg.DatasetMax, RangeRatio: cfg.RangeRatio,
		PrefixLen: cfg.PrefixLen, Repeat: cfg.Repeat, Percentiles: cfg.Percentiles, MetricsURL: metricsURL, JSONL: cfg.JSONL != nil, GPU: cfg.GPU != nil,
		Arrivals: cfg.Arrivals, Burstiness: cfg.Burstiness, LatencyFrom: cfg.LatencyFrom, Search: cfg.Search, SearchTolerance: cfg.SearchTolerance, SearchFrom: cfg.SearchFrom,
		MaxInFlight: cfg.MaxInFlight, TraceSpeed: cfg.TraceSpeed, TraceStart: cfg.TraceStart, TraceDuration: cfg.TraceDuration,
		ThinkTime: cfg.ThinkTime, SessionHeader: cfg.SessionHeader, Deployment: cfg.Deployment, Shard: cfg.Shard, Shards: cfg.Shards, Gaps: cfg.Gaps}
}

// config is the sweep's configuration on the host, without the parts made
// there (dialer, scraper, writers, host).
func (s Spec) config() macro.Config {
	return macro.Config{URL: s.URL, Model: s.Model, API: s.API, Concurrency: s.Concurrency, Requests: s.Requests,
		Duration: s.Duration, Warmup: s.Warmup, InputLen: s.InputLen, OutputLen: s.OutputLen, Rate: s.Rate,
		StopAtPlateau: s.StopAtPlateau, NoPreflight: s.NoPreflight, APIKey: s.APIKey, Timeout: s.Timeout,
		ClientBoundLag: s.ClientBoundLag, Seed: s.Seed, Limits: s.Limits, ServerLog: s.ServerLog, SLO: s.SLO,
		Dataset: s.Dataset, DatasetFile: s.DatasetFile, DatasetMax: s.DatasetMax, RangeRatio: s.RangeRatio,
		PrefixLen: s.PrefixLen, Repeat: s.Repeat, Percentiles: s.Percentiles,
		Arrivals: s.Arrivals, Burstiness: s.Burstiness, LatencyFrom: s.LatencyFrom, Search: s.Search, SearchTolerance: s.SearchTolerance, SearchFrom: s.SearchFrom,
		MaxInFlight: s.MaxInFlight, TraceSpeed: s.TraceSpeed, TraceStart: s.TraceStart, TraceDuration: s.TraceDuration,
		ThinkTime: s.ThinkTime, SessionHeader: s.SessionHeader, Deployment: s.Deployment, Shard: s.Shard, Shards: s.Shards, Gaps: s.Gaps}
}

package campaign

import (
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/run"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

// RunConfig is the campaign run's configuration: each phase's, as the
// phases' own mappings give it, and the run section. The caller sets the
// host, the server (shared with the cockpit's Load pane, or its own), and
// what reaches the server through the host (the sweep's dial and scraper).
// It fails when the campaign names no model the micro and NCCL plans can
// be built for.
func (c *Campaign) RunConfig(apiKey string) (run.Config, error) {
	spec, err := c.ModelSpec()
	if err != nil {
		return run.Config{}, err
	}
	return run.Config{
		Identity:    c.RunIdentity(),
		Watch:       c.LoadConfig(),
		Version:     c.Server.Version,
		ProfilerDir: c.Server.ProfilerDir,
		Sweep:       c.SweepConfig(apiKey),
		Loadgen:     c.Macro.Loadgen,
		MetricsURL:  c.MetricsURL(),
		ModelSpec:   spec,
		MicroPlan:   c.PlanOptions(c.Micro.Batch),
		Micro:       c.MicroConfig(),
		NCCLPlan:    c.PlanOptions(c.NCCL.Batch),
		NCCL:        c.NCCLConfig(),
		Profile:     c.ProfileConfig(apiKey),
		Leave:       c.Run.LeaveServer,
	}, nil
}

// RunIdentity is what the campaign's steps are done for: the model, TP and
// launch command (redacted).
func (c *Campaign) RunIdentity() phases.RunIdentity {
	name := c.Model.Name
	if name == "" {
		name = c.Model.Preset
	}
	if name == "" {
		name = c.Model.Config
	}
	return phases.RunIdentity{Model: name, TP: max(c.Model.TP, 1), Launch: remote.ScrubSecrets(strings.TrimSpace(c.Server.Launch))}
}

// SimOptions is the simulated deployment the campaign's sim section asks
// for (host: sim).
func (c *Campaign) SimOptions() sim.Options {
	o := sim.Options{LoadTime: c.Sim.LoadTime.Duration, StallAtGiB: c.Sim.StallAtGiB,
		ProfilerStallAtGiB: c.Sim.StallWithProfilerAtGiB, FailWith: c.Sim.Fail, LogPath: c.Server.Log,
		TP: c.Model.TP, Preset: c.Model.Preset}
	// The deployment follows the campaign: its GPUs per node are the TP
	// split over the nodes (one GPU at TP1), 8 when no TP is given.
	if c.Model.TP > 0 {
		o.GPUs = max(1, min(8, c.Model.TP/max(c.Sim.Nodes, 1)))
	}
	return o
}

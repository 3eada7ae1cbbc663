package campaign

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

// CampaignRunConfig is the campaign run's configuration: each phase's, as the
// phases' own mappings give it, and the run section. The caller sets the
// host, the server (shared with the cockpit's Load pane, or its own), and
// what reaches the server through the host (the sweep's dial and scraper).
// It fails when the campaign names no model the micro and NCCL plans can
// be built for.
func (c *Campaign) CampaignRunConfig(apiKey string) (campaignrun.Config, error) {
	spec, err := c.ModelSpec()
	if err != nil {
		return campaignrun.Config{}, err
	}
	return campaignrun.Config{
		Identity:    c.RunIdentity(),
		Watch:       c.LoadConfig(),
		Version:     c.Server.Version,
		ProfilerDir: c.Server.ProfilerDir,
		Sweep:       c.SweepConfig(apiKey),
		Loadgen:     c.Macro.Loadgen.Mode,
		MetricsURL:  c.MetricsURL(),
		ModelSpec:   spec,
		MicroPlan:   c.PlanOptions(c.Micro.Batch),
		Micro:       c.MicroConfig(),
		NCCLPlan:    c.PlanOptions(c.NCCL.Batch),
		NCCL:        c.NCCLConfig(),
		Profile:     c.ProfileConfig(apiKey),
		Leave:       c.Run.LeaveServer,
		Order:       c.RunOrder(),
		Params:      c.StepParams(),

		Variants:     c.VariantSpecs(),
		VariantSteps: c.Run.StepsOfVariants(),
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
		TP: c.Model.TP, Preset: c.Model.Preset, ProfilerFlush: new(c.Sim.ProfilerFlush.Duration)}
	if c.ServerEngine() == EngineSGLang {
		o.Engine = sim.EngineSGLang // the simulated server plays SGLang: its log and /metrics
	}
	// The deployment follows the campaign: its GPUs per node are the TP
	// split over the nodes (one GPU at TP1), 8 when no TP is given.
	if c.Model.TP > 0 {
		o.GPUs = max(1, min(8, c.Model.TP/max(c.Sim.Nodes, 1)))
	}
	return o
}

// StepParams are the parameters each step of a run is done with: its
// phase's section of the campaign, key by key ("macro.concurrency":
// "1,2,4"). A step done with others is done again (run.ChangedSteps);
// the model, TP and launch are the run's identity.
//
// The steps measured at the sweep's levels (micro at its batches, NCCL at
// its sizes, the profile at its levels) also carry the sweep's workload
// ("sweep.input_len"): when it changes they are out of date too, and the
// run says so and does them again (the plateau they targeted is added by
// the run, campaignrun.SweepPlateauKey).
func (c *Campaign) StepParams() map[string]map[string]string {
	macro := flatten("macro", c.Macro)
	out := map[string]map[string]string{
		campaignrun.Macro: macro, campaignrun.Micro: flatten("micro", c.Micro),
		campaignrun.NCCL: flatten("nccl", c.NCCL), campaignrun.Profile: flatten("profile", c.Profile),
	}
	for _, s := range []string{campaignrun.Micro, campaignrun.NCCL, campaignrun.Profile} {
		for _, k := range sweepWorkload {
			out[s]["sweep."+k] = macro["macro."+k]
		}
	}
	// Expert parallelism is the deployment's too (the model, TP and launch
	// are the run's identity): every step measured under it.
	for _, p := range out {
		p["model.ep"] = valueText(c.Model.EP)
	}
	return out
}

// sweepWorkload are the sweep's keys that set what the engine serves at its
// levels: a step measured at those levels depends on them.
var sweepWorkload = []string{"input_len", "output_len", "dataset", "dataset_file", "range_ratio", "prefix_len",
	"trace_speed", "trace_start", "trace_duration", "think_time", "session_header"}

// flatten writes a section's keys as text by their dotted key.
func flatten(section string, v any) map[string]string {
	out := map[string]string{}
	rv := reflect.ValueOf(v)
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !t.Field(i).IsExported() {
			continue
		}
		out[section+"."+tag] = valueText(rv.Field(i).Interface())
	}
	return out
}

// valueText is a campaign value as it is typed: 1,2,4 for a list, 90s for
// a duration.
func valueText(v any) string {
	switch x := v.(type) {
	case []int:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ",")
	case Duration:
		if x.Duration == 0 {
			return ""
		}
		return x.Duration.String()
	case bool:
		if !x {
			return ""
		}
	case int:
		if x == 0 {
			return ""
		}
	case float64:
		if x == 0 {
			return ""
		}
	}
	return fmt.Sprint(v)
}

// RunOrder is the order the campaign run takes its steps in: run.order,
// else the one campaignrun.OrderFor picks for the launch command.
func (c *Campaign) RunOrder() string {
	o, _ := campaignrun.OrderFor(c.Run.Order, c.Server.Launch)
	return o
}

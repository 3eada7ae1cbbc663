package campaign

import (
	"slices"
	"strings"
)

// RunSettings is the run section: the campaign run's settings (`profdeck run`).
type RunSettings struct {
	// LeaveServer is how the run leaves the server at the end: serving
	// (the default: restarted without the profiler in the classic order,
	// left as it is, profiler idle, in the one-load order), profiler, or
	// stopped.
	LeaveServer string `yaml:"leave_server"`
	// Order is the steps' order: one-load (micro and NCCL first, one load
	// with the profiler configured) or classic (serve, sweep, free the
	// GPUs, restart with the profiler); left out, one-load wherever the
	// run launches the server (campaignrun.OrderFor).
	Order        string   `yaml:"order,omitempty"`
	VariantSteps []string `yaml:"variant_steps,omitempty"` // each variant's steps after its load: macro (the sweep, and the search when macro.search is set; the default), profile (the variant then launches with the profiler configured)
}

// variantSteps are the steps a variant may run: micro and NCCL measure
// the GPUs, not the server, and are the baseline's.
var variantSteps = []string{"macro", "profile"}

// StepsOfVariants are the steps each variant runs (run.variant_steps, or
// macro alone).
func (r RunSettings) StepsOfVariants() []string {
	if len(r.VariantSteps) == 0 {
		return []string{"macro"}
	}
	return r.VariantSteps
}

// validateVariantSteps names a step a variant cannot run.
func (r RunSettings) validateVariantSteps() []error {
	for _, s := range r.VariantSteps {
		if !slices.Contains(variantSteps, s) {
			return []error{bad("run.variant_steps", "%q: each is one of %s", s, strings.Join(variantSteps, ", "))}
		}
	}
	return nil
}

// Sim is the simulated deployment's behaviour (host: sim), so that runs on
// it are scriptable.
type Sim struct {
	// LoadTime is how long a whole simulated load takes (default 20s for
	// the campaign run and the cockpit, QuickSim; 60s for `profdeck load`):
	// 0 is the key left out (a 0 given is refused, validateGivenZeros), so
	// a campaign written out omits it.
	LoadTime Duration `yaml:"load_time,omitempty"`
	// StallAtGiB stalls every load at this many GiB per GPU.
	StallAtGiB float64 `yaml:"stall_at_gib"`
	// StallWithProfilerAtGiB stalls the restarts with the torch profiler
	// there; the loads without the profiler do not stall.
	StallWithProfilerAtGiB float64 `yaml:"stall_with_profiler_at_gib"`
	// Fail makes the load fail part-way: oom or nccl.
	Fail string `yaml:"fail"`
	// Nodes is how many simulated nodes serve the model together (TP
	// across them: each has model.tp / nodes GPUs, at most 8); FaultNode the one node the stall or failure hits
	// (default: every node). Nodes is 1 by default (Defaults).
	Nodes     int  `yaml:"nodes"`
	FaultNode *int `yaml:"fault_node"` // the one node the stall or failure hits (default: every node)
	// ProfilerFlush is how long the simulated stop_profile takes to flush
	// its traces (default 3s, DefaultSimProfilerFlush; 0 is no delay).
	ProfilerFlush Duration `yaml:"profiler_flush"`
}

// Validate checks the run section.
func (r RunSettings) Validate() []error {
	if errs := r.validateVariantSteps(); errs != nil {
		return errs
	}
	switch r.Order {
	case "", "one-load", "classic":
	default:
		return []error{bad("run.order", "must be one-load or classic, got %q", r.Order)}
	}
	switch r.LeaveServer {
	case "serving", "profiler", "stopped":
		return nil
	}
	return []error{bad("run.leave_server", "must be serving, profiler or stopped, got %q", r.LeaveServer)}
}

// Validate checks the sim section.
func (s Sim) Validate() []error {
	var errs []error
	switch s.Fail {
	case "", "oom", "nccl":
	default:
		errs = append(errs, bad("sim.fail", "must be oom or nccl, got %q", s.Fail))
	}
	for _, kv := range []struct {
		key string
		v   float64
	}{{"sim.stall_at_gib", s.StallAtGiB}, {"sim.stall_with_profiler_at_gib", s.StallWithProfilerAtGiB}} {
		if !(kv.v >= 0) || !finite(kv.v) {
			errs = append(errs, bad(kv.key, "must be 0 or more GiB, got %g", kv.v))
		}
	}
	if s.LoadTime.Duration < 0 {
		errs = append(errs, bad("sim.load_time", "must not be negative"))
	}
	if s.ProfilerFlush.Duration < 0 {
		errs = append(errs, bad("sim.profiler_flush", "must not be negative"))
	}
	if s.Nodes < 1 || s.Nodes > 64 {
		errs = append(errs, bad("sim.nodes", "must be 1 to 64, got %d", s.Nodes))
	}
	if f := s.FaultNode; f != nil && (*f < 0 || *f >= max(s.Nodes, 1)) {
		errs = append(errs, bad("sim.fault_node", "must be a node of 0 to %d, got %d", max(s.Nodes, 1)-1, *f))
	}
	return errs
}

// used names the first key of the sim section that asks for something
// ("" when none does).
func (s Sim) used() string {
	switch {
	case s.StallAtGiB > 0:
		return "sim.stall_at_gib"
	case s.StallWithProfilerAtGiB > 0:
		return "sim.stall_with_profiler_at_gib"
	case s.Fail != "":
		return "sim.fail"
	case s.LoadTime.Duration > 0:
		return "sim.load_time"
	case s.Nodes > 1:
		return "sim.nodes"
	}
	return ""
}

// validateSimHost refuses a sim section for a host that is not simulated.
func (c *Campaign) validateSimHost() []error {
	if key := c.Sim.used(); key != "" && c.Host != "sim" {
		return []error{bad(key, "applies to host: sim only (host is %q)", c.Host)}
	}
	return nil
}

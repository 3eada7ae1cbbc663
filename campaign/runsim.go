package campaign

// Run is the campaign run's settings (`profdeck run`).
type Run struct {
	// LeaveServer is how the run leaves the server at the end: serving
	// (restarted without the profiler; the default), profiler, or stopped.
	LeaveServer string `yaml:"leave_server"`
}

// Sim is the simulated deployment's behaviour (host: sim), so that runs on
// it are scriptable.
type Sim struct {
	// LoadTime is how long a whole simulated load takes (default 60s).
	LoadTime Duration `yaml:"load_time"`
	// StallAtGiB stalls every load at this many GiB per GPU.
	StallAtGiB float64 `yaml:"stall_at_gib"`
	// StallWithProfilerAtGiB stalls the restarts with the torch profiler
	// there; the loads without the profiler do not stall.
	StallWithProfilerAtGiB float64 `yaml:"stall_with_profiler_at_gib"`
	// Fail makes the load fail part-way: oom or nccl.
	Fail string `yaml:"fail"`
	// Nodes is how many simulated 8-GPU nodes serve the model together
	// (TP across them); FaultNode the one node the stall or failure hits
	// (default: every node).
	Nodes     int  `yaml:"nodes"`
	FaultNode *int `yaml:"fault_node"`
}

// validateRunSim checks the run and sim sections.
func (c *Campaign) validateRunSim(bad func(key, format string, args ...any) error) error {
	switch c.Run.LeaveServer {
	case "serving", "profiler", "stopped":
	default:
		return bad("run.leave_server", "must be serving, profiler or stopped, got %q", c.Run.LeaveServer)
	}
	switch c.Sim.Fail {
	case "", "oom", "nccl":
	default:
		return bad("sim.fail", "must be oom or nccl, got %q", c.Sim.Fail)
	}
	for key, v := range map[string]float64{"sim.stall_at_gib": c.Sim.StallAtGiB,
		"sim.stall_with_profiler_at_gib": c.Sim.StallWithProfilerAtGiB} {
		if v < 0 {
			return bad(key, "must not be negative, got %g", v)
		}
	}
	if c.Sim.Nodes < 0 || c.Sim.Nodes > 64 {
		return bad("sim.nodes", "must be 1 to 64, got %d", c.Sim.Nodes)
	}
	if f := c.Sim.FaultNode; f != nil && (*f < 0 || *f >= max(c.Sim.Nodes, 1)) {
		return bad("sim.fault_node", "must be a node of 0 to %d, got %d", max(c.Sim.Nodes, 1)-1, *f)
	}
	if (c.Sim.StallAtGiB > 0 || c.Sim.StallWithProfilerAtGiB > 0 || c.Sim.Fail != "" || c.Sim.LoadTime.Duration > 0 || c.Sim.Nodes > 1) && c.Host != "sim" {
		return bad("sim", "applies to host: sim only (host is %q)", c.Host)
	}
	return nil
}

package campaign

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases/doctor"
	"github.com/profdeck/profdeck/remote"
)

// DoctorConfig is what `profdeck doctor` and the run's doctor step check on
// host (the head): every part of the campaign needed, the sweep reaching
// the server through host as it will.
func (c *Campaign) DoctorConfig(host remote.Host, apiKey string) doctor.Config {
	sweep := c.SweepConfig(apiKey)
	sweep.Dial, sweep.Host = host.DialContext, host
	from := "the campaign (not from a file): every key valid"
	if c.Path != "" {
		from = fmt.Sprintf("%s: every key valid", c.Path)
	}
	return doctor.Config{Host: host, Campaign: from, GPUs: max(c.TP()/c.NodeCount(), 1),
		Python: c.Micro.Python, Torchrun: c.NCCL.Torchrun, Launch: c.Server.Launch,
		Sweep: sweep, MetricsURL: c.MetricsURL(), Loadgen: c.Macro.Loadgen.Mode,
		ProfilerDir: c.Server.ProfilerDir, Container: c.Server.Container != "" || strings.HasPrefix(strings.TrimSpace(c.Server.Launch), "docker "),
		Need: doctor.All, TraceGiB: DefaultTraceGiB, Timeout: DefaultDoctorTimeout}
}

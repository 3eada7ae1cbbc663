package campaign

import (
	"math"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/report"
)

// DefaultHeadroom is the share of each replica's SLO capacity a capacity
// plan keeps free unless the campaign says otherwise.
const DefaultHeadroom = 0.2

// Capacity is the traffic the campaign plans for: a request rate, or users
// who each think ThinkTime between an answer and their next request. The
// notebook answers how many replicas and GPUs serve it within the SLO.
type Capacity struct {
	Rate      float64  `yaml:"rate"`
	Users     int      `yaml:"users"`
	ThinkTime Duration `yaml:"think_time"`
	// SLO to plan within ("": the sweep's, macro.slo).
	SLO string `yaml:"slo"`
	// Headroom is the share of each replica's SLO capacity kept free.
	Headroom float64 `yaml:"headroom"`
}

// Asked reports whether the section asks for a plan (a rate or users).
func (c Capacity) Asked() bool { return c.Rate > 0 || c.Users > 0 }

// Validate checks the capacity section; an empty one asks nothing.
func (c Capacity) Validate() []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, bad(key, format, args...)) }
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 {
		add("capacity.rate", "want requests per second, 0 or more, got %g", c.Rate)
	}
	if c.Users < 0 {
		add("capacity.users", "must not be negative, got %d", c.Users)
	}
	if c.Rate > 0 && c.Users > 0 {
		add("capacity.users", "capacity.rate is set too: the traffic is a rate or users, not both")
	}
	if c.ThinkTime.Duration < 0 {
		add("capacity.think_time", "must not be negative, got %s", c.ThinkTime.Duration)
	}
	if c.ThinkTime.Duration > 0 && c.Users == 0 {
		add("capacity.think_time", "goes with capacity.users (the users' pause between requests)")
	}
	if math.IsNaN(c.Headroom) || c.Headroom < 0 || c.Headroom >= 1 {
		add("capacity.headroom", "want a share from 0 to below 1 (0.2 keeps 20%% free), got %g", c.Headroom)
	}
	if c.SLO != "" {
		if _, err := macro.ParseSLO(c.SLO); err != nil {
			add("capacity.slo", "%v", err)
		}
	}
	return errs
}

// Ask is the section as a capacity plan's request; nil when it asks none.
func (c Capacity) Ask() *report.CapacityAsk {
	if !c.Asked() {
		return nil
	}
	return &report.CapacityAsk{Rate: c.Rate, Users: c.Users, Think: c.ThinkTime.Duration, SLO: c.SLO, Headroom: c.Headroom}
}

// Cost is what the GPUs cost: with GPUHour set, the notebook's variants
// table and `run --json` give each variant's cost per million output
// tokens.
type Cost struct {
	GPUHour float64 `yaml:"gpu_hour"` // dollars per GPU-hour: each variant's cost per million output tokens (0: none)
}

// Validate checks the cost section.
func (c Cost) Validate() []error {
	if math.IsNaN(c.GPUHour) || math.IsInf(c.GPUHour, 0) || c.GPUHour < 0 {
		return []error{bad("cost.gpu_hour", "want dollars per GPU-hour, 0 or more, got %g", c.GPUHour)}
	}
	return nil
}

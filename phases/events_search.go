package phases

import "fmt"

// KindMacroSearch is the SLO search's state after each of its steps and at
// its end (--search concurrency|rate).
const KindMacroSearch = "macro.search"

// The search's modes (Search.Mode) and why its climb stopped
// (Search.StoppedBecause).
const (
	SearchConcurrency = "concurrency"
	SearchRate        = "rate"
	SearchSpeed       = "speed" // a trace's replay speed factor

	StopSLO        = "slo"             // a level missed the SLO
	StopFailures   = "failures"        // a level's failed requests alone kept it from the SLO
	StopSaturation = "over_saturation" // TTFT and the queue grew with time inside a level
	StopLadderTop  = "ladder_top"      // the ladder's top level met the SLO: the limit is above it
	StopOperator   = "stopped"         // the operator stopped the sweep
	StopCancelled  = "cancelled"       // the sweep was cancelled
)

// Search is the largest concurrency (closed loop) or request rate (open
// loop) that met the sweep's SLO, found by climbing the ladder until a level
// missed, then bisecting between the last level that met and the first that
// missed. The true limit lies in [Lower, Upper): Lower met the SLO, Upper
// did not.
type Search struct {
	Mode string `json:"mode"` // SearchConcurrency, SearchRate or SearchSpeed
	Unit string `json:"unit"` // "concurrency", "req/s" or "speed"
	SLO  string `json:"slo"`
	// RequiredShare is the share of a level's requests that must meet the SLO.
	RequiredShare float64 `json:"required_share"`
	// Answer is the largest value measured that met the SLO (0: none did);
	// it equals Lower.
	Answer float64 `json:"answer"`
	Lower  float64 `json:"lower"`
	// Upper is the smallest value measured above Lower that missed the
	// SLO; nil when none missed (the limit is above the ladder's top).
	Upper *float64 `json:"upper"`
	// Runs is the level runs the search took, repeats included.
	Runs int `json:"runs"`
	// StoppedBecause is why the climb up the ladder stopped (Stop…).
	StoppedBecause string `json:"stopped_because"`
	// Tolerance is how close Lower and Upper had to come: Upper − Lower at
	// most Tolerance × Lower (and 1 for a concurrency).
	Tolerance float64 `json:"tolerance"`
	// Done is false while the search runs.
	Done  bool         `json:"done"`
	Steps []SearchStep `json:"steps"`
	Text  string       `json:"text"`
}

// SearchStep is one level the search ran and its verdict.
type SearchStep struct {
	Value float64 `json:"value"`
	Phase string  `json:"phase"` // "ladder" or "bisect"
	Runs  int     `json:"runs"`  // runs of the level (more when its verdict was inside its noise)
	// Share is the share of the level's requests that met the SLO (failed
	// ones count as missing it), with its 95% Wilson interval.
	Share     float64 `json:"share"`
	ShareLow  float64 `json:"share_low"`
	ShareHigh float64 `json:"share_high"`
	Met       bool    `json:"met"`
	// Uncertain: the share's interval still held the required share after
	// the most runs; the verdict is the share's point estimate.
	Uncertain bool `json:"uncertain,omitempty"`
	// Why a level missed: StopSLO, StopFailures or StopSaturation.
	Why string `json:"why,omitempty"`
	// ClientBound: this client, not the server, limited the level.
	ClientBound bool `json:"client_bound,omitempty"`
}

// ValueText is a value of the search in its unit, e.g. "C=24" or "3.5 req/s".
func (s *Search) ValueText(v float64) string {
	switch s.Mode {
	case SearchRate:
		return fmt.Sprintf("%.3g req/s", v)
	case SearchSpeed:
		return fmt.Sprintf("%.3g×", v)
	}
	return fmt.Sprintf("C=%.0f", v)
}

// Interval is the search's interval in words, e.g. "[16, 18)" or "[256, above the ladder)".
func (s *Search) Interval() string {
	f := func(v float64) string {
		if s.Mode == SearchRate || s.Mode == SearchSpeed {
			return fmt.Sprintf("%.3g", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	if s.Upper == nil {
		return fmt.Sprintf("[%s, above the ladder's top)", f(s.Lower))
	}
	return fmt.Sprintf("[%s, %s)", f(s.Lower), f(*s.Upper))
}

func init() {
	Register(KindMacroSearch, Macro, Search{}, false)
}

// Schedule is an open-loop level's intended sends against what was sent:
// the scheduling delay (actual − intended send) and the rates.
type Schedule struct {
	Arrivals   string  `json:"arrivals"`             // poisson or constant
	Burstiness float64 `json:"burstiness,omitempty"` // gamma shape; 1 is Poisson
	// RequestedRate is the rate asked for; ScheduledRate the rate of the
	// intended send times drawn (random arrivals differ from the request
	// by chance); AchievedRate the rate of the actual sends. Both over the
	// span from the first measured send to the last.
	RequestedRate float64 `json:"requested_rate"`
	ScheduledRate float64 `json:"scheduled_rate"`
	AchievedRate  float64 `json:"achieved_rate"`
	Requests      int     `json:"requests"` // measured sends
	P50DelayMs    float64 `json:"p50_scheduling_delay_ms"`
	P99DelayMs    float64 `json:"p99_scheduling_delay_ms"`
	MaxDelayMs    float64 `json:"max_scheduling_delay_ms"`
	// FellBehind: the client sent late (p99 delay over the client-bound
	// lag) or slower than scheduled (under 95%); Why says which.
	FellBehind bool   `json:"fell_behind"`
	Why        string `json:"why,omitempty"`
	// LatencyFrom is where the level's TTFT and E2EL start: "sent" or
	// "intended" (the coordinated-omission correction).
	LatencyFrom string `json:"latency_from"`
	// TraceReuse is, when a trace is replayed, the share of its input
	// tokens a prefix cache could hold given its hash ids: what the
	// server's prefix-cache hit rate is set beside.
	TraceReuse *float64 `json:"trace_implied_reuse,omitempty"`
	// TraceSpeed is the speed factor the trace was replayed at (0: no
	// trace): the load a speed search (--search speed) steps.
	TraceSpeed float64 `json:"trace_speed,omitempty"`
}

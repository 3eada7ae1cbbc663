package fleet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// Audit is one agent's self-audit of a level, as its client measured it.
type Audit struct {
	P99SendLagms  float64 `json:"p99_send_lag_ms"`
	CPUFraction   float64 `json:"cpu_fraction"` // CPU seconds per wall second per core
	EventsPerRead float64 `json:"events_per_read"`
	ClientBound   bool    `json:"client_bound"`
	Reason        string  `json:"reason,omitempty"`
}

// AgentLevel is what one agent sent for one level. Lost is set when the
// agent went away before it finished: what it sent until then is kept.
type AgentLevel struct {
	Host     string        `json:"host"`
	Seconds  []Second      `json:"seconds"`
	OK       int64         `json:"ok"`
	Failed   int64         `json:"failed"`
	Tokens   int64         `json:"tokens"`
	Audit    Audit         `json:"audit"`
	Lost     string        `json:"lost,omitempty"`
	Offset   Offset        `json:"-"`
	Duration time.Duration `json:"-"` // first request sent to last one ended
	// Level is the agent's own result of its share (nil: none came back);
	// Result the sweep it was part of.
	Level *phases.LevelResult `json:"-"`
	// Start is when the agent started against the level's start, on the
	// coordinator's clock (StartKnown: the agent said).
	Start      time.Duration `json:"-"`
	StartKnown bool          `json:"-"`
	Result     *macro.Result `json:"-"`
}

// Quantiles are a metric's merged percentiles in milliseconds.
type Quantiles struct {
	Count         int64
	P50, P90, P99 float64
}

// Level is the merge of every agent's measurements of one level.
type Level struct {
	Metrics    map[string]Quantiles
	OK, Failed int64
	Tokens     int64
	Partial    bool
	Stopped    bool // Ctrl-C stopped every agent mid-level
	// OperatorStop: the operator's stop ended the level on every agent
	// before its end (their requests in flight finished).
	OperatorStop bool
	// DeliveredRate is the requests sent within the level's duration per
	// second, all agents together (0 for a level of a number of requests).
	DeliveredRate float64
	// Span is the longest agent's time from its first send to its last end.
	Span       time.Duration
	Lost       []string // "host: why" of each agent lost mid-level
	Bottleneck []string // "host: why" of each agent that was client-bound
	Audits     map[string]Audit
	Agents     []AgentLevel // what each agent sent, in order
	// StartSpread is the latest agent's start less the earliest's, on the
	// coordinator's clock (offsets applied).
	StartSpread time.Duration
	// Pcts are the extra percentiles asked for (macro.Config.Percentiles).
	Pcts        macro.Percentiles
	hists       map[string]*Merged
	first, last *time.Duration
}

func (lv *Level) addStart(a AgentLevel) {
	if !a.StartKnown {
		return
	}
	if lv.first == nil || a.Start < *lv.first {
		lv.first = &a.Start
	}
	if lv.last == nil || a.Start > *lv.last {
		lv.last = &a.Start
	}
	lv.StartSpread = *lv.last - *lv.first
}

// Merge merges the agents' histograms metric by metric: the percentiles
// are those of all the requests (within Precision), never averages.
func Merge(agents []AgentLevel) (Level, error) {
	lv := Level{Metrics: map[string]Quantiles{}, Audits: map[string]Audit{}, Agents: agents}
	merged := map[string]*Merged{}
	for i, a := range agents {
		name := agentName(a.Host, i)
		for _, s := range a.Seconds {
			m := merged[s.Metric]
			if m == nil {
				m = NewMerged()
				merged[s.Metric] = m
			}
			if err := m.Add(s); err != nil {
				return lv, fmt.Errorf("agent %s: %w", name, err)
			}
		}
		lv.OK += a.OK
		lv.Failed += a.Failed
		lv.Tokens += a.Tokens
		lv.Span = max(lv.Span, a.Duration)
		lv.addStart(a)
		lv.Audits[name] = a.Audit
		if a.Lost != "" {
			lv.Partial = true
			lv.Lost = append(lv.Lost, name+": "+a.Lost)
		}
		if a.Audit.ClientBound {
			lv.Bottleneck = append(lv.Bottleneck, name+": "+a.Audit.Reason)
		}
	}
	lv.hists = merged
	for k, m := range merged {
		lv.Metrics[k] = Quantiles{Count: m.Count(),
			P50: ms(m.Quantile(0.50)), P90: ms(m.Quantile(0.90)), P99: ms(m.Quantile(0.99))}
	}
	sort.Strings(lv.Lost)
	sort.Strings(lv.Bottleneck)
	return lv, nil
}

// Note is the level's one line about its agents: partial, and who was
// the bottleneck ("" when all agents finished and none was bound).
func (lv Level) Note() string {
	var parts []string
	if lv.Stopped {
		parts = append(parts, "partial: stopped mid-level")
	}
	if lv.OperatorStop {
		parts = append(parts, "partial: stopped by the operator mid-level (requests in flight finished)")
	}
	if len(lv.Lost) > 0 {
		parts = append(parts, "partial: lost "+strings.Join(lv.Lost, "; "))
	}
	if len(lv.Bottleneck) > 0 {
		parts = append(parts, "load agent was the bottleneck: "+strings.Join(lv.Bottleneck, "; "))
	}
	return strings.Join(parts, "; ")
}

func agentName(host string, i int) string { return fmt.Sprintf("%s#%d", host, i) }

func ms(us int64) float64 { return float64(us) / 1e3 }

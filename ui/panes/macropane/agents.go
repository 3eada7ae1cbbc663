package macropane

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// agentsFmt lays out a level's agents cell: how many ran it ("2"), with
// those lost mid-level taken off ("1/2").
const agentsFmt = " %4s"

// hasAgents reports whether a finished level ran over load agents.
func (m *Model) hasAgents() bool {
	for _, lv := range m.levels {
		if len(lv.Agents) > 0 {
			return true
		}
	}
	return false
}

// agentsCell is a level's agents cell: "—" for a level of one client.
func agentsCell(lv phases.LevelResult) string {
	n := len(lv.Agents)
	if n == 0 {
		return fmt.Sprintf(agentsFmt, "—")
	}
	lost := len(lostAgents(lv))
	if lost == 0 {
		return fmt.Sprintf(agentsFmt, strconv.Itoa(n))
	}
	return fmt.Sprintf(agentsFmt, fmt.Sprintf("%d/%d", n-lost, n))
}

// partial reports whether a level over agents measured less than its
// plan: an agent lost mid-level, or every agent stopped mid-level.
func partial(lv phases.LevelResult) bool {
	if len(lostAgents(lv)) > 0 {
		return true
	}
	for _, n := range lv.Notes {
		if len(lv.Agents) > 0 && strings.HasPrefix(n, "partial") {
			return true
		}
	}
	return false
}

// lostAgents are the level's agents lost mid-level, as "name: why".
func lostAgents(lv phases.LevelResult) []string {
	var out []string
	for _, a := range lv.Agents {
		if a.Lost != "" {
			out = append(out, a.Agent+": "+a.Lost)
		}
	}
	return out
}

// lastAgentLevel is the newest finished level run over agents, or nil.
func (m *Model) lastAgentLevel() *phases.LevelResult {
	for i := len(m.levels) - 1; i >= 0; i-- {
		if len(m.levels[i].Agents) > 0 {
			return &m.levels[i]
		}
	}
	return nil
}

// agentLines are the newest agent level's agents, the most telling first:
// partial and who was lost, the agents that were the bottleneck, each
// agent's clock offset ± its uncertainty, then why each was lost. In the
// warning style on up to two rows when the level is partial or bound,
// else one quiet row.
func (m *Model) agentLines() []string {
	lv := m.lastAgentLevel()
	if lv == nil {
		return nil
	}
	var lost, why, bound, clocks []string
	for _, a := range lv.Agents {
		if a.Lost != "" {
			lost, why = append(lost, a.Agent), append(why, a.Agent+": "+a.Lost)
		}
		if a.ClientBound {
			bound = append(bound, a.Agent)
		}
		clocks = append(clocks, a.Agent+" "+clockOffset(a.OffsetMs, a.UncertaintyMs))
	}
	parts := []string{fmt.Sprintf("agents at %s: %d", levelAt(*lv), len(lv.Agents))}
	switch {
	case len(lost) > 0:
		parts = append(parts, "partial: lost "+strings.Join(lost, ", "))
	case partial(*lv):
		parts = append(parts, "partial: stopped mid-level")
	}
	if len(bound) > 0 {
		parts = append(parts, "bottleneck: "+strings.Join(bound, ", "))
	}
	parts = append(parts, "clock "+strings.Join(clocks, ", "))
	text := strings.Join(append(parts, why...), " · ")
	if len(parts) > 2 {
		return m.wrapped(m.d.Styles.Warn, text)
	}
	return []string{m.d.Styles.Subtle.Render(components.Fit(text, m.w))}
}

// levelAt names a level: C=8, or its rate, or a trace's speed.
func levelAt(lv phases.LevelResult) string {
	switch {
	case lv.Schedule != nil && lv.Schedule.TraceSpeed > 0:
		return "replay " + levelCell(lv)
	case lv.Rate > 0:
		return fmt.Sprintf("%.4g req/s", lv.Rate)
	}
	return "C=" + levelCell(lv)
}

// clockOffset is an agent's clock against the coordinator's with its
// uncertainty, e.g. "+12.80ms±0.41ms".
func clockOffset(offMs, uncMs float64) string {
	sign := "+"
	if offMs < 0 {
		sign = "−"
	}
	return sign + units.Us(math.Abs(offMs)*1e3) + "±" + units.Us(uncMs*1e3)
}

package loadpane

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// gpuRows draws one bar per GPU, grouped by node when there are several.
func (m *Model) gpuRows(w int) []string {
	if len(m.hosts) > 1 {
		return m.groupedRows(w)
	}
	var rows []string
	for _, host := range m.hosts {
		st := m.states[host]
		for _, g := range st.GPUs {
			label := fmt.Sprintf("GPU%d", g.Index)
			if len(m.hosts) > 1 {
				label = host + ":" + label
			}
			if st.Stall != nil {
				g.ETASeconds = 0 // nothing moves: no time to go
			}
			rows = append(rows, m.gpuRow(label, g, w, phases.PastWeights(st.Stage)))
		}
	}
	return rows
}

func (m *Model) gpuRow(label string, g phases.GPULoad, w int, past bool) string {
	s := m.d.Styles
	label = fmt.Sprintf("%-5s", label)
	if !g.Known {
		return s.Bold.Render(label) + " " + s.Warn.Render(components.Truncate("memory unknown (nvidia-smi: N/A)", w-len(label)-1))
	}
	// The total changes meaning when the weights are in (the weights
	// expected, then the whole GPU): each is named, so the step from one
	// to the other reads as what it is.
	denom, of := g.ExpectedGiB, " weights"
	if denom <= 0 || past {
		denom, of = g.TotalGiB, " of GPU"
	}
	pct := 0.0
	if denom > 0 {
		pct = 100 * g.UsedGiB / denom
	}
	figs := fmt.Sprintf(" %5.1f/%.1f GiB %3.0f%%%s", g.UsedGiB, denom, pct, of)
	if denom <= 0 {
		figs = fmt.Sprintf(" %5.1f GiB", g.UsedGiB)
	}
	use := gpuUse(g)
	tail := ""
	if g.RateGiBMin > 0.05 {
		tail = fmt.Sprintf(" %4.1f GiB/min", g.RateGiBMin)
	}
	if g.ETASeconds > 0 {
		tail += " ETA " + units.Duration(g.ETASeconds)
	}
	barW := w - len(label) - 1 - len(figs) - len(use) - len(tail)
	if barW < 8 {
		tail = ""
		barW = w - len(label) - 1 - len(figs) - len(use)
	}
	if barW < 8 {
		use = ""
		barW = w - len(label) - 1 - len(figs)
	}
	figs += use
	return s.Bold.Render(label) + " " + m.bar.View(pct/100, max(0, barW)) + figs + s.Subtle.Render(tail)
}

func (m *Model) shardLine(w int) string {
	s := m.d.Styles
	st, ok := m.states[m.host()]
	if !ok || st.ShardsTotal == 0 {
		return s.Subtle.Render(components.Truncate("shards: no bar yet (rank 0 draws it once loading starts)", w))
	}
	label := "shards"
	figs := fmt.Sprintf(" %d/%d", st.ShardsDone, st.ShardsTotal)
	switch {
	case st.ShardSecPerIt >= 1:
		figs += fmt.Sprintf(" %.1f s/shard", st.ShardSecPerIt)
	case st.ShardSecPerIt > 0:
		figs += fmt.Sprintf(" %.1f shards/s", 1/st.ShardSecPerIt)
	}
	if st.ShardETA > 0 && st.Stall == nil {
		figs += " ETA " + units.Duration(st.ShardETA)
	}
	if st.ShardsDone == st.ShardsTotal && st.Stage == phases.StageWeights {
		figs += " (bar done; weights still settling)"
	}
	barW := min(30, w-len(label)-1-len(figs))
	if barW < 5 {
		return components.Truncate(label+figs, w)
	}
	return s.Bold.Render(label) + " " + m.bar.View(float64(st.ShardsDone)/float64(st.ShardsTotal), barW) + components.Truncate(figs, w-len(label)-1-barW)
}

func (m *Model) milestoneLine(w int) string {
	s := m.d.Styles
	st := m.states[m.host()]
	cur := phases.StageIndex(st.Stage)
	furthest := -1
	for stage := range m.milestones {
		furthest = max(furthest, phases.StageIndex(stage))
	}
	var parts, plainParts []string
	plain := 0
	for _, stage := range phases.StageOrder[1:] {
		name := phases.StageLabel(stage)
		_, reached := m.milestones[stage]
		idx := phases.StageIndex(stage)
		took := units.Duration(m.stageTook(stage, st))
		var p string
		switch {
		case reached && st.Stage == phases.StageFailed && idx == furthest:
			p = "✗" + name + " " + took
			parts = append(parts, s.Bad.Render(p))
		case reached && (idx < cur || cur < 0 || stage == phases.StageReady):
			p = "✓" + name + " " + took
			parts = append(parts, s.Good.Render(p))
		case reached:
			p = "▶" + name + " " + took
			parts = append(parts, s.Bold.Render(p))
		default:
			p = "·" + name
			parts = append(parts, s.Subtle.Render(p))
		}
		plain += len([]rune(p)) + 2
		plainParts = append(plainParts, p)
	}
	line := strings.Join(parts, "  ")
	if kv := st.KVCacheTokens; kv > 0 && plain+20 < w {
		line += s.Subtle.Render(fmt.Sprintf("  KV %s tok", units.Int(kv)))
	}
	if plain > w {
		return s.Subtle.Render(components.Truncate(strings.Join(plainParts, " "), w))
	}
	return line
}

// stageTook is how long a reached stage lasted: until the next stage
// reached, or until now for the stage the load is in. Ready is a moment:
// its figure is the whole load's time, as the header says it. The header's
// "weights 6 s" and the milestone's "▶weights 6 s" are the same number.
func (m *Model) stageTook(stage string, st phases.LoadState) float64 {
	at, ok := m.milestones[stage]
	if !ok {
		return 0
	}
	if stage == phases.StageReady {
		return at
	}
	for _, next := range phases.StageOrder[phases.StageIndex(stage)+1:] {
		if n, ok := m.milestones[next]; ok {
			return max(0, n-at)
		}
	}
	return max(0, st.ElapsedS-at)
}

// gpuUse is a GPU's utilisation and power beside its memory, when
// nvidia-smi gave them: " SM 87% 612 W".
func gpuUse(g phases.GPULoad) string {
	out := ""
	if g.UtilKnown {
		out += fmt.Sprintf(" SM %3.0f%%", g.UtilPct)
	}
	if g.PowerW > 0 {
		out += fmt.Sprintf(" %4.0f W", g.PowerW)
	}
	return out
}

package loadpane

import (
	"context"
	"fmt"
	"sort"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/ui/components"
)

// follower is what the pane runs to follow the load: one node's Watcher, or
// a Group of every node's.
type follower interface {
	Run(ctx context.Context, em *phases.Emitter) error
	MarkStarted()
	MarkStopped()
	Diagnose()
}

// compact is true when the GPUs are shown one row per node: several nodes,
// 16 GPUs or more, rows that do not fit, and the operator has not asked
// for every GPU (the g key).
func (m *Model) compact(rows, room int) bool {
	return len(m.hosts) > 1 && !m.expanded && m.gpuCount() >= 16 && rows > room
}

func (m *Model) gpuCount() int {
	n := 0
	for _, h := range m.hosts {
		n += len(m.states[h].GPUs)
	}
	return n
}

// nodeRows draws one row per node: its GPUs' memory as min/median/max GiB,
// a bar at the median, and its stage (or LOST, STALLED, FAILED).
func (m *Model) nodeRows(w int) []string {
	s := m.d.Styles
	width := 0
	for _, h := range m.hosts {
		width = max(width, len([]rune(h)))
	}
	width = min(width, 16)
	var rows []string
	for _, h := range m.hosts {
		st := m.states[h]
		label := fmt.Sprintf("%-*s", width, components.Truncate(h, width))
		lo, med, hi, denom, known := spread(st)
		state := phases.StageLabel(st.Stage)
		style := s.Subtle
		switch {
		case m.lost[h]:
			state, style = "LOST", s.Bad
		case st.Failure != nil:
			state, style = "FAILED", s.Bad
		case st.Stall != nil:
			state, style = "STALLED", s.Bad
		}
		if known == 0 {
			rows = append(rows, s.Bold.Render(label)+" "+style.Render(components.Truncate("no GPU readings · "+state, w-width-1)))
			continue
		}
		gpus := "GPUs"
		if known == 1 {
			gpus = "GPU"
		}
		figs := fmt.Sprintf(" %d %s %5.1f/%5.1f/%5.1f GiB ", known, gpus, lo, med, hi)
		barW := w - width - 1 - len(figs) - len(state)
		if barW < 6 {
			figs = fmt.Sprintf(" %5.1f GiB ", med)
			barW = w - width - 1 - len(figs) - len(state)
		}
		pct := 0.0
		if denom > 0 {
			pct = med / denom
		}
		rows = append(rows, s.Bold.Render(label)+" "+m.bar.View(pct, max(0, barW))+figs+style.Render(components.Truncate(state, max(0, w-width-1-barW-len(figs)))))
	}
	hint := "min/median/max GiB per node · g: every GPU"
	return append(rows, s.Subtle.Render(components.Truncate(hint, w)))
}

// spread is a node's used memory: min, median and max GiB over the GPUs
// read, the bar's denominator, and how many GPUs were read.
func spread(st phases.LoadState) (lo, med, hi, denom float64, known int) {
	var used []float64
	for _, g := range st.GPUs {
		if !g.Known {
			continue
		}
		used = append(used, g.UsedGiB)
		d := g.ExpectedGiB
		if d <= 0 || phases.PastWeights(st.Stage) {
			d = g.TotalGiB
		}
		denom = max(denom, d)
	}
	if len(used) == 0 {
		return 0, 0, 0, 0, 0
	}
	sort.Float64s(used)
	n := len(used)
	med = used[n/2]
	if n%2 == 0 {
		med = (used[n/2-1] + used[n/2]) / 2
	}
	return used[0], med, used[n-1], denom, n
}

// groupedRows draws every GPU, grouped under a line per node.
func (m *Model) groupedRows(w int) []string {
	var rows []string
	for _, host := range m.hosts {
		st := m.states[host]
		head := fmt.Sprintf("── %s · %d GPUs · %s", host, len(st.GPUs), phases.StageLabel(st.Stage))
		if m.lost[host] {
			head += " · LOST"
		}
		rows = append(rows, m.d.Styles.Subtle.Render(components.Truncate(head, w)))
		for _, g := range st.GPUs {
			rows = append(rows, m.gpuRow(fmt.Sprintf("GPU%d", g.Index), g, w, phases.PastWeights(st.Stage)))
		}
	}
	return rows
}

var (
	_ follower = (*load.Group)(nil)
	_ follower = (*load.Watcher)(nil)
)

// bannerState is the state the banner tells: the first node that failed,
// else the node that has been stalled longest (it stopped first: the
// others then wait for it at the next collective), else the head's.
func (m *Model) bannerState() phases.LoadState {
	for _, h := range m.hosts {
		if st := m.states[h]; st.Failure != nil {
			return st
		}
	}
	var first *phases.LoadState
	for _, h := range m.hosts {
		if st := m.states[h]; st.Stall != nil && (first == nil || st.Stall.ForS > first.Stall.ForS) {
			first = &st
		}
	}
	if first != nil {
		return *first
	}
	return m.states[m.host()]
}

// orderHosts keeps the nodes in the campaign's order, the head first,
// whichever answered first; hosts it does not list go last.
func (m *Model) orderHosts() {
	rank := map[string]int{}
	for i, h := range m.d.Nodes {
		rank[h.Name()] = i + 1
	}
	if len(rank) == 0 {
		return
	}
	pos := func(h string) int {
		if r, ok := rank[h]; ok {
			return r
		}
		return len(rank) + 1
	}
	sort.SliceStable(m.hosts, func(i, j int) bool { return pos(m.hosts[i]) < pos(m.hosts[j]) })
}

package macropane

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// writeCharts writes the three charts, label column first, then the axis.
func (m *Model) writeCharts(b *strings.Builder, l layout) {
	s := m.d.Styles
	// Latencies exist only for seconds in which requests finished (TPOT)
	// or started streaming (TTFT): show the latest measured second.
	t50, t99, ttft, tok := m.tpot50.lastSet(), m.tpot99.lastSet(), m.ttft.lastSet(), m.toks.lastSet()
	if m.cur != nil && m.cur.HaveTick {
		tok = m.cur.Tick.OutputTokS
	}
	var srv float64
	srvText, srvShort := "server —", "srv —"
	if m.haveServer && m.server.Available {
		srv = m.server.GenTokS
		srvText, srvShort = "server "+units.Rate(srv), "srv "+units.Rate(srv)
	}
	if t, st, ss, ok := m.levelRates(); ok {
		tok, srvText, srvShort = t, st, ss
	}
	type spec struct {
		c             *chart
		name, cur     string
		sub, subShort string // second label row; short form shares its row with the top
		unit          string
	}
	specs := []spec{
		{m.tpotChart, "TPOT", "p50 " + units.Ms(t50) + " ms", "p99 " + units.Ms(t99) + " ms", "p99 " + units.Ms(t99), " ms"},
		{m.ttftChart, "TTFT", "p50 " + units.Ms(ttft) + " ms", "", "", " ms"},
		{m.tokChart, "tok/s", units.Rate(tok), srvText, srvShort, ""},
	}
	if l.charts == 4 {
		sub := "waiting —"
		run := "—"
		if m.haveServer && m.server.Available {
			run = units.Thousands(m.server.Running)
			sub = "waiting " + units.Thousands(m.server.Waiting)
		}
		specs = append(specs, spec{m.srvChart, "server run", run, sub, sub, ""})
	}
	for _, sp := range specs {
		top := "top " + topLabel(sp.c.top) + sp.unit
		rows := make([]string, l.chartH)
		rows[0] = sp.name + " " + sp.cur
		switch {
		case l.chartH >= 3:
			rows[1], rows[l.chartH-1] = "     "+sp.sub, "     "+top
		case l.chartH == 2 && sp.sub != "":
			rows[1] = "     " + sp.subShort + " ▲" + topLabel(sp.c.top)
		case l.chartH == 2:
			rows[1] = "     " + top
		}
		lines := strings.Split(sp.c.view, "\n")
		for i := 0; i < l.chartH; i++ {
			b.WriteByte('\n')
			b.WriteString(s.Subtle.Render(components.Fit(rows[i], l.labelW)))
			b.WriteByte(' ')
			if i < len(lines) {
				b.WriteString(lines[i])
			}
		}
	}
	m.writeGPUStrip(b, l)
	b.WriteByte('\n')
	axis := fmt.Sprintf("◂ %d s, 1 col = 1 s", l.chartW)
	if cols := m.colsPerSecond(l.chartW); cols > 1 {
		axis = fmt.Sprintf("◂ %d s, %d cols = 1 s", l.chartW/cols, cols)
	}
	b.WriteString(s.Subtle.Render(components.Fit(axis, l.labelW)))
	b.WriteByte(' ')
	b.WriteString(m.axisLine(l.chartW))
}

// topLabel writes a chart's Y-range top compactly.
func topLabel(v float64) string {
	if v >= 10000 {
		return units.Rate(v/1000) + "k"
	}
	return units.Rate(v)
}

// axisLine pins level starts, the plateau and markers to their seconds.
// Markers and the plateau win over level labels when they collide.
func (m *Model) axisLine(w int) string {
	s := m.d.Styles
	type item struct {
		x     int
		label string
		kind  markKind
	}
	var items []item
	for _, k := range m.marks {
		x := w - (m.samples-k.At)*m.colsPerSecond(w)
		if x < 0 {
			continue
		}
		label := k.Label
		switch k.Kind {
		case markUser:
			label = "◆" + label
		case markPlateau:
			label = "▲" + label
		default:
			label = "┊" + label
		}
		items = append(items, item{min(x, w-1), label, k.Kind})
	}
	used := make([]bool, w)
	line := []rune(strings.Repeat(" ", w))
	style := make([]markKind, w)
	for _, pass := range []markKind{markUser, markPlateau, markLevel} {
		for _, it := range items {
			if it.kind != pass {
				continue
			}
			r := []rune(it.label)
			x := it.x
			if x+len(r) > w {
				x = max(0, w-len(r))
			}
			end := min(w, x+len(r)+1)
			free := true
			for i := x; i < end; i++ {
				if used[i] {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			for i := x; i < end; i++ {
				used[i] = true
			}
			for i, c := range r {
				if x+i < w {
					line[x+i] = c
					style[x+i] = it.kind
				}
			}
		}
	}
	// Render runs of one kind with one style.
	var b strings.Builder
	for i := 0; i < w; {
		j := i
		for j < w && style[j] == style[i] && used[j] == used[i] {
			j++
		}
		seg := string(line[i:j])
		switch {
		case !used[i] || style[i] == markLevel:
			b.WriteString(s.Subtle.Render(seg))
		case style[i] == markPlateau:
			b.WriteString(s.Good.Render(seg))
		default:
			b.WriteString(s.Warn.Render(seg))
		}
		i = j
	}
	return b.String()
}

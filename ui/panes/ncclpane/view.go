package ncclpane

import (
	"fmt"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
	"github.com/profdeck/profdeck/ui/panes/gpupane"
)

// View renders the pane, exactly filling its size: drawn again only when
// something changed since (see Update), else the drawing kept.
func (m *Model) View() string {
	if m.dirty || m.view == "" {
		m.view, m.dirty = components.Box(m.draw(), m.w, m.h), false
		m.draws++
	}
	return m.view
}

// draw renders the pane's lines.
func (m *Model) draw() string {
	w, h := max(m.w, 40), max(m.h, 8)
	out := m.headLines(w)
	body := m.lines
	m.body.SetSize(len(body), max(0, h-len(out)))
	first, end := m.body.Visible()
	if first < end {
		out = append(out, body[first:end]...)
		if more := len(body) - end; more > 0 {
			// Say that the tables go on below (j scrolls).
			mark := fmt.Sprintf(" ↓%d more", more)
			last := len(out) - 1
			out[last] = components.Truncate(out[last], w-len([]rune(mark))) + m.d.Styles.Subtle.Render(mark)
		}
	}
	if len(out) > h {
		out = out[:h]
	}
	return strings.Join(out, "\n")
}

func (m *Model) bodyRows() int {
	w, h := max(m.w, 40), max(m.h, 8)
	return max(1, h-len(m.headLines(w)))
}

func (m *Model) headLines(w int) []string {
	st := m.d.Styles
	lines := []string{m.r.TitleLine("NCCL · decode-step collectives", w)}
	if e := m.res.Env; e != nil {
		s := fmt.Sprintf("%s ×%d · NCCL %s · torch %s", e.GPU, e.NProc, e.NCCL, e.Torch)
		keys := make([]string, 0, len(e.NCCLEnv))
		for k := range e.NCCLEnv {
			if k != "NCCL_VERSION" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			s += " " + k + "=" + e.NCCLEnv[k]
		}
		lines = append(lines, st.Subtle.Render(components.Truncate(s, w)))
	}
	return append(lines, m.r.StatusLines(gpupane.Status{
		Progress: m.res.Progress,
		Done:     "done (s runs again; j/k scroll)",
		Empty:    len(m.res.Bursts) == 0 && m.res.None == nil,
		Hint:     "s: time the decode step's all-reduces and the EP All-to-All under torchrun (ranks, batch sizes and launcher from the campaign)",
	}, w)...)
}

// bodyLines are the burst and All-to-All tables.
func (m *Model) bodyLines(w int) []string {
	st := m.d.Styles
	var lines []string
	r := &m.res
	if r.None != nil {
		lines = append(lines, st.Bold.Render(components.Truncate("No collectives at this deployment", w)))
		lines = append(lines, wrapText(r.None.Reason, w)...)
	}
	if len(r.Bursts) > 0 {
		b0 := r.Bursts[0]
		hidden := 0
		if b0.M > 0 {
			hidden = int(b0.Bytes) / b0.M / 2
		}
		lines = append(lines, st.Bold.Render(components.Truncate(fmt.Sprintf("All-reduce burst: %d × [M, %d] BF16 per step, max over ranks", b0.Count, hidden), w)))
		if l := r.Link; l != nil {
			lines = append(lines, st.Subtle.Render(components.Truncate(fmt.Sprintf("link: %s %s GB/s per direction per GPU, %s; busbw = bytes×2(n−1)/n ÷ time per op (graph when timed)",
				l.Kind, units.Rate(l.PeakGB), l.Detail), w)))
		}
		lines = append(lines, st.TableHeader.Render(components.Truncate(fmt.Sprintf("%-5s %9s %9s %8s %9s %8s %7s %6s %9s", "M", "bytes/op", "eager ms", "µs/op", "graph ms", "µs/op", "busbw", "% link", "betw. ms"), w)))
		for _, b := range r.Bursts {
			g1, g2, in := nccl.GraphCells(b, "-")
			bw, pct := burstBusBW(b, r.Link)
			lines = append(lines, components.Truncate(fmt.Sprintf("%-5d %9s %9.3f %8.1f %9s %8s %7s %6s %9s", b.M, units.Bytes(b.Bytes), b.TotalMs, b.PerOpUs, g1, g2, bw, pct, in), w))
		}
		for _, l := range wrapText("betw.: all-reduces between GEMMs that evict L2, in a graph, less the GEMMs", w) {
			lines = append(lines, st.Subtle.Render(l))
		}
		if r.Env != nil && r.Env.NProc == 1 {
			lines = append(lines, st.Subtle.Render(components.Truncate("one rank: NCCL moves no data; these are launch costs", w)))
		}
	}
	if len(r.AllToAll) > 0 && m.d.Campaign != nil && !m.d.Campaign.Model.EP {
		// As the notebook says it: no cliff for a step that sends none.
		lines = append(lines, "")
		for _, l := range wrapText(nccl.NoEPText(len(r.AllToAll)), w) {
			lines = append(lines, st.Subtle.Render(l))
		}
	} else if len(r.AllToAll) > 0 {
		a0 := r.AllToAll[0]
		per := int64(0)
		if a0.Tokens > 0 {
			per = a0.Bytes / int64(a0.Tokens)
		}
		lines = append(lines, "", st.Bold.Render(components.Truncate(fmt.Sprintf("All-to-All, EP dispatch: T tokens/GPU × %s each, busbw = algbw×(n−1)/n", units.Bytes(per)), w)),
			st.TableHeader.Render(components.Truncate(fmt.Sprintf("%-6s %10s %9s %10s %10s %6s", "T/GPU", "bytes", "µs", "algbw GB/s", "busbw GB/s", "% link"), w)))
		for _, a := range r.AllToAll {
			row := fmt.Sprintf("%-6d %10s %9.1f %10.2f %10.2f %6s", a.Tokens, units.Bytes(a.Bytes), a.Us, a.AlgBW, a.BusBW, linkPct(a.BusBW, r.Link))
			if c := r.Cliff; c != nil && c.Tokens == a.Tokens {
				lines = append(lines, st.Warn.Render(components.Truncate(row+fmt.Sprintf("  ◀ cliff ×%.1f", c.ToUs/c.FromUs), w)))
				continue
			}
			lines = append(lines, components.Truncate(row, w))
		}
		for _, l := range wrapText(nccl.OffNodeText(r.AllToAll), w) {
			lines = append(lines, st.Subtle.Render(l))
		}
		if c := r.Cliff; c != nil {
			lines = append(lines, st.Warn.Render(components.Truncate(fmt.Sprintf("latency cliff at T=%d tokens/GPU: %.1f → %.1f µs", c.Tokens, c.FromUs, c.ToUs), w)))
		} else if m.r.State == common.RunFinished {
			lines = append(lines, st.Subtle.Render(components.Truncate("no latency cliff: no step more than doubles the latency", w)))
		}
	}
	for _, x := range r.Warnings {
		for _, l := range wrapText("warning: "+x, w) {
			lines = append(lines, st.Warn.Render(l))
		}
	}
	for _, e := range r.Errors {
		for _, l := range wrapText("error: "+nccl.ErrorText(e), w) {
			lines = append(lines, st.Bad.Render(l))
		}
	}
	return lines
}

// burstBusBW is the bus bandwidth one all-reduce of the burst achieved, as
// nccl-tests defines it (bytes × 2(n−1)/n over the time of one op; the
// CUDA-graph time when there is one, as vLLM decodes), and its share of
// the link's peak per direction.
func burstBusBW(b phases.NCCLBurst, l *phases.NCCLLink) (bw, pct string) {
	us := b.PerOpUs
	if b.GraphPerOpUs > 0 {
		us = b.GraphPerOpUs
	}
	if us <= 0 || b.NProc < 2 {
		return "-", "-"
	}
	n := float64(b.NProc)
	gbs := float64(b.Bytes) * 2 * (n - 1) / n / (us * 1e3)
	return units.Rate(gbs), linkPct(gbs, l)
}

// linkPct is a bandwidth's share of the link's peak ("-" without one).
func linkPct(gbs float64, l *phases.NCCLLink) string {
	if l == nil || l.PeakGB <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*gbs/l.PeakGB)
}

// wrapText is components.Wrap with no line for empty text.
func wrapText(s string, w int) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return components.Wrap(s, w)
}

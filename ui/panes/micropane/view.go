package micropane

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
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
	top := m.topLines(w)
	bottom := m.totalLines(w)
	rows := max(0, h-len(top)-len(bottom)-1)
	var out []string
	out = append(out, top...)
	out = append(out, m.table(w, rows)...)
	for len(out) < h-len(bottom) {
		out = append(out, "")
	}
	out = append(out, bottom...)
	if len(out) > h {
		out = out[:h]
	}
	return strings.Join(out, "\n")
}

// topLines: title, environment, status, batch-size selector.
func (m *Model) topLines(w int) []string {
	st := m.d.Styles
	lines := []string{m.r.TitleLine("Micro · decode-step GEMMs", w)}
	if e := m.res.Env; e != nil {
		s := e.GPU
		if c := m.res.Calib; c != nil {
			s += fmt.Sprintf(" · 8192³ %.0f TFLOP/s", c.TFLOPs)
			if c.DoBenchTFLOPs > 0 {
				s += fmt.Sprintf(" (do_bench %.0f, %+.1f%%)", c.DoBenchTFLOPs, 100*(c.TFLOPs/c.DoBenchTFLOPs-1))
			}
		}
		s += fmt.Sprintf(" · peak %.0f GB/s · torch %s CUDA %s", e.PeakGBs, e.Torch, e.CUDA)
		lines = append(lines, st.Subtle.Render(components.Truncate(s, w)))
	}
	lines = append(lines, m.r.StatusLines(gpupane.Status{
		Progress: m.res.Progress,
		Done:     fmt.Sprintf("done: %d GEMMs over %d batch sizes (s runs again)", len(m.res.GEMMs), len(m.ms)),
		Empty:    len(m.res.GEMMs) == 0,
		Hint:     "s: time every GEMM of one decode step on the GPU host (the model, TP and batch sizes come from the campaign)",
	}, w)...)
	if ms := m.ms; len(ms) > 0 {
		var b strings.Builder
		b.WriteString("M:")
		for i, v := range ms {
			if i == m.mi {
				b.WriteString(" " + st.Selected.Render(fmt.Sprintf(" %d ", v)))
			} else {
				fmt.Fprintf(&b, "  %d ", v)
			}
		}
		note := " sorted by " + micro.OrderNames[m.order] + " (o)"
		legend := ""
		if m.served != "" {
			legend = "* timed BF16, served " + m.served
		}
		// The key hint gives way first, then the legend takes a line of its
		// own: what * means is not in the help, so it is never cut.
		fits := func(extra string) bool { return ansi.StringWidth(b.String())+ansi.StringWidth(extra) <= w }
		if legend != "" && fits("  h/l M ·"+note+" · "+legend) {
			note, legend = note+" · "+legend, ""
		} else if legend != "" && fits(" "+note+" · "+legend) {
			note, legend = note+" · "+legend, ""
		}
		if hint := "  h/l M ·"; fits(hint + note) {
			note = hint + note
		} else {
			note = " " + note
		}
		b.WriteString(st.Subtle.Render(note))
		lines = append(lines, components.Truncate(b.String(), w))
		if legend != "" {
			for _, l := range components.Wrap(legend, w) {
				lines = append(lines, st.Subtle.Render(l))
			}
		}
	}
	return lines
}

// rowsVisible is how many GEMM rows the table shows now.
func (m *Model) rowsVisible() int {
	w, h := max(m.w, 40), max(m.h, 8)
	return max(1, h-len(m.topLines(w))-len(m.totalLines(w))-1)
}

func (m *Model) table(w, rows int) []string {
	if len(m.ms) == 0 || rows <= 0 {
		return nil
	}
	st := m.d.Styles
	wide := w >= 86
	all, sum := m.shown, m.sum
	m.rows.SetSize(len(all), rows) // the status lines above may have grown
	from, end := m.rows.Visible()
	// When the rows do not all fit, the first column says which show.
	first := "GEMM"
	if m.rows.Clipped() {
		first = fmt.Sprintf("GEMM %d–%d/%d", from+1, end, len(all))
	}
	head := fmt.Sprintf("%-15s %-17s %4s %7s %6s %5s %8s %5s", first, "M×N×K", "/stp", "µs", "TF/s", "%BW", "step µs", "share")
	if wide {
		head += fmt.Sprintf(" %6s", "GB/s")
	}
	lines := []string{st.TableHeader.Render(components.Truncate(head, w))}
	for _, g := range all[from:end] {
		lines = append(lines, components.Truncate(m.row(g, sum, wide), w))
	}
	return lines
}

func (m *Model) row(g phases.GEMMResult, sum float64, wide bool) string {
	s := fmt.Sprintf("%-15s %-17s %4d %7.1f %6.1f %5.1f %8.0f %4.1f%%",
		components.Truncate(micro.Name(g), 15), components.Truncate(micro.Shape(g), 17), g.PerStep, g.Us, g.TFLOPs, g.BWPct, g.StepUs, micro.Share(g, sum))
	if wide {
		s += fmt.Sprintf(" %6.0f", g.GBs)
	}
	return s
}

// totalLines: per batch size, the sum of the step's GEMMs and the step run
// back-to-back.
func (m *Model) totalLines(w int) []string {
	ms := m.ms
	if len(ms) == 0 {
		return nil
	}
	st := m.d.Styles
	lines := []string{st.TableHeader.Render(components.Truncate(fmt.Sprintf("%-6s %12s %18s", "step", "Σ GEMMs ms", "back-to-back ms"), w))}
	for _, v := range ms {
		b2b := "…"
		if s, ok := m.res.Step(v); ok {
			b2b = fmt.Sprintf("%.3f", s.BackToBackUs/1e3)
			if s.Graph {
				b2b += " graph"
			}
		}
		line := fmt.Sprintf("M=%-4d %12.3f %18s", v, m.res.StepSum(v)/1e3, b2b)
		if v == ms[m.mi] {
			line = st.Bold.Render(line)
		}
		lines = append(lines, components.Truncate(line, w))
	}
	errs := m.res.Errors
	if len(errs) > 2 {
		errs = errs[len(errs)-2:]
	}
	for _, e := range errs {
		lines = append(lines, st.Bad.Render(components.Truncate("error: "+micro.ErrorText(e), w)))
	}
	return lines
}

package notespane

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/components"
)

// layout redraws the budget block and the notes for the current size. It
// runs when the size, the notes or the budget's inputs change, so View only
// joins what is drawn.
func (m *Model) layout() {
	w := max(m.w, 20)
	check := m.checklistLines(w)
	m.budgetView = append(check, m.budgetLines(w, len(check))...)
	m.vp.SetWidth(w)
	m.vp.SetHeight(max(m.notesHeight(), 1))
	m.vp.SetContentLines(m.noteLines(w))
	if m.follow {
		m.vp.GotoBottom()
	}
	m.dirty = true
}

// budgetLines is the budget block: the single-stream split as a bar with
// its legend, then the plateau's (a bar when there is room beside the
// checklist's checkRows, else one line).
func (m *Model) budgetLines(w, checkRows int) []string {
	var out []string
	out = append(out, m.splitLines(m.budget.Single, w, true)...)
	if p := m.budget.Plateau; p != nil {
		out = append(out, m.splitLines(*p, w, m.h >= 22+checkRows)...)
	} else {
		out = append(out, m.st.subtle.Render("plateau: none named yet (the macro sweep names it)"))
	}
	return out
}

// splitLines draws one split: title, bar, legend, the isolated benchmarks
// beside as a cross-check and what is missing; or a single line when full
// is false.
func (m *Model) splitLines(b report.BudgetSplit, w int, full bool) []string {
	title := m.st.title.Render("Decode-time budget · " + b.Label)
	if !full {
		title = m.st.bold.Render(shortLabel(b.Label) + " ")
	}
	var out []string
	switch {
	case !b.HasTPOT && full:
		out = append(out, title, m.st.subtle.Render(components.Truncate(b.Headline, w)))
	case !b.HasTPOT:
		out = append(out, components.Truncate(title+m.st.subtle.Render(b.Headline), w))
	case full:
		out = append(out, components.Truncate(title+"  "+m.st.bold.Render(b.TPOTLabel()), w), m.bar(b, w))
		out = append(out, m.legend(b, w)...)
	default:
		var ps []string
		top := b.Largest(3)
		if len(top) == 0 {
			top = b.Parts() // nothing split yet: the unsplit TPOT
		}
		for _, p := range top {
			name := shortName(p.Name)
			if partialGEMM(b, p) {
				name += " so far"
			}
			ps = append(ps, fmt.Sprintf("%s %.0f%%", name, p.Pct))
		}
		tp := strings.TrimPrefix(b.TPOTLabel(), "TPOT ")
		tp = tp[:strings.Index(tp, " ms")+3]
		line := title + m.bar(b, 8) + " " + fmt.Sprintf("%s of %s %s", strings.Join(ps, " · "), tp, tpotKind(b))
		out = append(out, components.Truncate(line, w))
	}
	if x := crossLine(b); x != "" && full {
		out = append(out, components.Truncate(m.st.subtle.Render(x), w))
	}
	if miss := missingShort(b); miss != "" {
		out = append(out, components.Truncate(m.st.warn.Render("missing: ")+m.st.subtle.Render(miss), w))
	}
	for _, x := range b.Warnings {
		out = append(out, components.Truncate(m.st.bad.Render("! ")+m.st.warn.Render(x), w))
	}
	return out
}

// shortLabel is "plateau C=128" for "plateau (C=128)".
func shortLabel(l string) string {
	return strings.NewReplacer("(", "", ")", "", "single stream", "C=1:").Replace(l) + ":"
}

// tpotKind says which TPOT the split splits.
func tpotKind(b report.BudgetSplit) string {
	if len(b.Split) > 0 {
		return "mean"
	}
	return "median"
}

// crossLine puts the isolated benchmarks beside the engine's parts.
func crossLine(b report.BudgetSplit) string {
	e := b.Engine
	if e == nil || (!b.HasAR && !b.HasGEMM) {
		return ""
	}
	var ps []string
	if b.HasAR {
		ps = append(ps, fmt.Sprintf("NCCL %.2f vs comm %.2f", b.AllReduceMs, e.CommMs))
	}
	if b.HasGEMM {
		micro := "micro"
		if b.GEMMPartial {
			micro = "micro so far"
		}
		ps = append(ps, fmt.Sprintf("%s %.2f vs GEMM+MoE %.2f", micro, b.GEMMms, e.GEMMms+e.MoEms))
	}
	return "cross-check, isolated: " + strings.Join(ps, " · ") + " ms"
}

func (m *Model) bar(b report.BudgetSplit, w int) string {
	parts := b.Parts()
	var sb strings.Builder
	for i, n := range report.BarWidths(parts, w) {
		if n == 0 {
			continue
		}
		sb.WriteString(m.runeStyle(parts[i].Rune).Render(strings.Repeat(string(parts[i].Rune), n)))
	}
	return sb.String()
}

// runeStyle colours a part of the bar by its rune.
func (m *Model) runeStyle(r rune) lipgloss.Style {
	switch r {
	case '█':
		return m.st.ar
	case '▓':
		return m.st.gemm
	}
	return m.st.rest
}

// legend names each part of the bar with its time (ms per token) and share, in as many
// lines of width w as it takes.
func (m *Model) legend(b report.BudgetSplit, w int) []string {
	var out []string
	line, n := "", 0
	for _, p := range b.Parts() {
		name := shortName(p.Name)
		if partialGEMM(b, p) {
			name += " so far" // the micro run's GEMMs timed so far, no step total yet
		}
		if p.Stale != "" {
			name += "*" // measured under another workload: the warning below says which
		}
		t := fmt.Sprintf(" %s %.2f %.0f%%", name, unsigned0(p.Ms, 0.005), unsigned0(p.Pct, 0.5))
		if n > 0 && n+2+1+len([]rune(t)) > w {
			out = append(out, line)
			line, n = "", 0
		}
		if n > 0 {
			line, n = line+"  ", n+2
		}
		line += m.runeStyle(p.Rune).Render(string(p.Rune)) + t
		n += 1 + len([]rune(t))
	}
	return append(out, components.Truncate(line, w))
}

// shortName trims a part's name for narrow lines.
func shortName(n string) string {
	if i := strings.Index(n, " ("); i > 0 {
		n = n[:i]
	}
	switch n {
	case report.PartComm:
		return "comm"
	case report.PartAttention:
		return "attn"
	case report.PartOther:
		return "other"
	case report.PartHost:
		return "host"
	case report.PartNotAcc:
		return "unacc."
	}
	return n
}

func missingShort(b report.BudgetSplit) string {
	var s []string
	if !b.HasTPOT {
		s = append(s, fmt.Sprintf("TPOT at C=%d (macro)", b.Concurrency))
	}
	if !b.HasAR {
		s = append(s, fmt.Sprintf("all-reduce at M=%d (NCCL)", b.Concurrency))
	}
	if !b.HasGEMM {
		s = append(s, fmt.Sprintf("GEMMs at M=%d (micro)", b.Concurrency))
	}
	return strings.Join(s, ", ")
}

// notesHeight is what is left for the notes list.
func (m *Model) notesHeight() int {
	h := m.h - len(m.budgetView) - 2 // header line and status line
	if m.journalErr != "" {
		h--
	}
	return h
}

func (m *Model) noteLines(w int) []string {
	if len(m.items) == 0 {
		return []string{m.st.subtle.Render("No notes yet: press n to add one (it is on disk before it shows here).")}
	}
	// The pane a note was typed in gets 7 cells, more when a longer one
	// ("Server/Load") is in the list, so that no name is cut.
	tagWidth := 7
	for _, it := range m.items {
		tagWidth = max(tagWidth, min(ansi.StringWidth(it.pane), 11))
	}
	var out []string
	for _, it := range m.items {
		head := m.st.time.Render(it.at.Local().Format("15:04:05")) + " "
		tag := it.pane
		if tag == "" {
			tag = "—"
		}
		head += m.st.subtle.Render(fmt.Sprintf("%-*s", tagWidth, components.Truncate(tag, tagWidth))) + " "
		text := it.text
		if it.marker {
			text = m.st.marker.Render("▲ " + text)
		}
		indent := 8 + 1 + tagWidth + 1
		body := ansi.Wrap(text, max(w-indent, 10), " ")
		for i, l := range strings.Split(body, "\n") {
			if i == 0 {
				out = append(out, head+l)
			} else {
				out = append(out, strings.Repeat(" ", indent)+l)
			}
		}
	}
	return out
}

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
	w := max(m.w, 20)
	lines := append(make([]string, 0, len(m.budgetView)+4), m.budgetView...)
	hdr := fmt.Sprintf("Notes and markers (%d)", len(m.items))
	if !m.vp.AtBottom() || !m.vp.AtTop() {
		hdr += fmt.Sprintf(" · %3.0f%%", 100*m.vp.ScrollPercent())
	}
	lines = append(lines, m.st.title.Render(hdr))
	lines = append(lines, m.vp.View())
	if m.journalErr != "" {
		lines = append(lines, m.st.bad.Render(components.Truncate("journal not written: "+m.journalErr, w)))
	}
	lines = append(lines, m.status(w))
	return strings.Join(lines, "\n")
}

// ago is how long ago the notebook was last written, to the second, as
// the status line says it after the time ("" when it says none).
func (m *Model) ago() string {
	nb := m.nb
	if nb.Path == "" || nb.Err != "" || nb.At.IsZero() {
		return ""
	}
	if ago := m.now.Sub(nb.At).Round(time.Second); ago >= 0 {
		return fmt.Sprintf(" (%s ago)", ago)
	}
	return ""
}

// status says where the notebook is and when it was last written; a long
// path loses its beginning, never the time.
func (m *Model) status(w int) string {
	nb := m.nb
	if nb.Path == "" {
		return m.st.subtle.Render("notebook: none (no campaign file)")
	}
	path := nb.Path
	if rel, err := filepath.Rel(".", path); err == nil && !strings.HasPrefix(rel, "..") {
		path = rel
	}
	st := m.st.subtle
	var suffix string
	switch {
	case nb.Err != "" && nb.At.IsZero():
		st, suffix = m.st.bad, " · not written: "+nb.Err
	case nb.Err != "":
		st, suffix = m.st.bad, fmt.Sprintf(" · last write failed (previous %s): %s", nb.At.Local().Format("15:04:05"), nb.Err)
	case nb.At.IsZero():
		suffix = " · not written yet (w writes it)"
	default:
		suffix = " · written " + nb.At.Local().Format("15:04:05") + m.ago()
	}
	const prefix = "notebook: "
	room := w - len(prefix) - min(ansi.StringWidth(suffix), w/2)
	if pw := ansi.StringWidth(path); pw > room && room > 1 {
		path = ansi.TruncateLeft(path, pw-room+1, "…")
	}
	return st.Render(components.Truncate(prefix+path+suffix, w))
}

// unsigned0 is x, or 0 where x rounds to zero at the printed precision
// (half is the rounding step's half): a part of -0.001 ms reads "0.00",
// not "-0.00".
func unsigned0(x, half float64) float64 {
	if x > -half && x < half {
		return 0
	}
	return x
}

// partialGEMM says p is micro's GEMM figure while it sums only the GEMMs
// timed so far (the run has written no per-step total).
func partialGEMM(b report.BudgetSplit, p report.BudgetPart) bool {
	return b.GEMMPartial && p.Name == report.PartGEMM && p.Step != phases.Profile
}

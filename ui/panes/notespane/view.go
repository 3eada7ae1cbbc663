package notespane

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

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
	if b := m.budget; b.ProfileCheck != "" {
		c := fmt.Sprintf("profile: communication %.1f%% of device time", 100*b.ProfileShare)
		if b.ProfileCommMs > 0 {
			c += fmt.Sprintf(", %.2f ms", b.ProfileCommMs)
			if b.ProfileStepMs > 0 {
				c += fmt.Sprintf(" of %.2f ms", b.ProfileStepMs)
			}
			c += " per step"
		}
		out = append(out, m.st.subtle.Render(components.Truncate(c, w)))
	}
	return out
}

// splitLines draws one split: title, bar, legend and what is missing; or a
// single line when full is false.
func (m *Model) splitLines(b report.BudgetSplit, w int, full bool) []string {
	title := m.st.title.Render("Decode-time budget · " + b.Label)
	if !full {
		title = m.st.bold.Render(b.Label + ": ")
	}
	var out []string
	switch {
	case !b.HasTPOT && full:
		out = append(out, title, m.st.subtle.Render(components.Truncate(b.Summary(), w)))
	case !b.HasTPOT:
		out = append(out, components.Truncate(title+m.st.subtle.Render(b.Summary()), w))
	case full:
		tp := fmt.Sprintf("TPOT %.2f ms", b.TPOTms)
		out = append(out, components.Truncate(title+"  "+m.st.bold.Render(tp), w), m.bar(b, w), components.Truncate(m.legend(b), w))
	default:
		var ps []string
		for _, p := range b.Parts() {
			ps = append(ps, fmt.Sprintf("%s %.1f%%", shortName(p.Name), p.Pct))
		}
		line := title + m.bar(b, 12) + " " + fmt.Sprintf("%s of %.2f ms", strings.Join(ps, " · "), b.TPOTms)
		out = append(out, components.Truncate(line, w))
	}
	if e := b.Engine; e != nil && full {
		line := fmt.Sprintf("in the engine (profile, %d steps): comm %.2f · GEMM %.2f · attn %.2f · MoE %.2f · other %.2f = %.2f ms GPU/step",
			e.Steps, e.CommMs, e.GEMMms, e.AttentionMs, e.MoEms, e.OtherMs, e.StepMs)
		out = append(out, components.Truncate(m.st.subtle.Render(line), w))
	}
	if wh := b.Whole; wh != nil && full && len(wh.Parts) > 0 {
		out = append(out, components.Truncate(m.st.subtle.Render("whole: "+wh.Line()), w))
	}
	if miss := missingShort(b); miss != "" {
		out = append(out, components.Truncate(m.st.warn.Render("missing: ")+m.st.subtle.Render(miss), w))
	}
	for _, x := range b.Warnings {
		out = append(out, components.Truncate(m.st.bad.Render("! ")+m.st.warn.Render(x), w))
	}
	return out
}

func (m *Model) bar(b report.BudgetSplit, w int) string {
	parts := b.Parts()
	var sb strings.Builder
	for i, n := range report.BarWidths(parts, w) {
		if n == 0 {
			continue
		}
		seg := strings.Repeat(string(parts[i].Rune), n)
		switch i {
		case 0:
			if b.HasAR {
				seg = m.st.ar.Render(seg)
			} else if b.HasGEMM {
				seg = m.st.gemm.Render(seg)
			} else {
				seg = m.st.rest.Render(seg)
			}
		case 1:
			if b.HasAR && b.HasGEMM {
				seg = m.st.gemm.Render(seg)
			} else {
				seg = m.st.rest.Render(seg)
			}
		default:
			seg = m.st.rest.Render(seg)
		}
		sb.WriteString(seg)
	}
	return sb.String()
}

func (m *Model) legend(b report.BudgetSplit) string {
	var ps []string
	for _, p := range b.Parts() {
		st := m.st.rest
		switch p.Rune {
		case '█':
			st = m.st.ar
		case '▓':
			st = m.st.gemm
		}
		ps = append(ps, st.Render(string(p.Rune))+fmt.Sprintf(" %s %.2f ms %.1f%%", shortName(p.Name), p.Ms, p.Pct))
	}
	return strings.Join(ps, "  ")
}

// shortName trims the rest's explanation for narrow lines.
func shortName(n string) string {
	if i := strings.Index(n, " ("); i > 0 {
		return n[:i]
	}
	return n
}

// missingShort names the missing inputs in a few words each.
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

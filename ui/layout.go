package ui

import (
	"fmt"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// layout gives every pane its content area.
func (m *Model) layout() {
	w, h := m.w, m.h-common.ChromeRows
	if h < 1 {
		h = 1
	}
	for _, p := range m.panes {
		p.SetSize(w, h)
	}
	m.help.SetWidth(w)
	m.note.SetWidth(w - 10)
}

// View draws header, tabs, the focused pane (or the help) and the status bar.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "profdeck"
	return v
}

func (m *Model) render() string {
	if m.quitting {
		return ""
	}
	if m.w == 0 || m.h == 0 {
		return "starting…"
	}
	if m.w < MinWidth || m.h < MinHeight {
		return m.tooSmall()
	}
	s := m.d.Styles
	bodyH := m.h - common.ChromeRows
	var body string
	switch {
	case m.confirmQuit:
		body = s.BannerWarn.Render("A phase is still running. Quit anyway? y = quit, any other key = stay")
	case m.showHelp:
		body = s.Title.Render("Help — "+m.table[m.active].Title) + "\n\n" +
			m.help.FullHelpView(keyMap{pane: m.focused()}.FullHelp()) + "\n\n" +
			s.Title.Render("Everywhere") + s.Subtle.Render("   (a tab's * : its phase is running)") + "\n" + m.help.FullHelpView(m.globalColumns()) + "\n\n" +
			s.Subtle.Render("? or esc closes the help. In tmux, `set -sg escape-time 10` makes esc quick.")
	default:
		body = m.focused().View()
	}
	out := []string{m.header(), m.tabs(), components.Box(body, m.w, bodyH), m.footer()}
	return strings.Join(out, "\n")
}

// footer is the status bar and the key help under it; a status too long
// for one row takes the help's row too while it shows, so its end (often
// the figure or the fix) is not cut at 80 columns. The opening notice
// keeps to its row.
func (m *Model) footer() string {
	if m.status == "" || m.noting || m.statusFields != nil || components.Width(m.status) <= m.w {
		return m.statusBar() + "\n" + m.helpLine()
	}
	st := m.d.Styles.Footer
	if m.statusErr {
		st = m.d.Styles.FooterError
	}
	rows := components.WrapRows(m.status, m.w, 2)
	for len(rows) < 2 {
		rows = append(rows, "")
	}
	return st.Render(rows[0]) + "\n" + st.Render(rows[1])
}

func (m *Model) tooSmall() string {
	msg := fmt.Sprintf("too small: have %d×%d, need %d×%d", m.w, m.h, MinWidth, MinHeight)
	hint := m.d.Styles.Subtle.Render(components.Truncate("enlarge the window (q quits)", m.w))
	if m.confirmQuit {
		// The question must show here too, or q seems to do nothing.
		hint = m.d.Styles.Warn.Render(components.Truncate("a phase is running: y quits, any other key stays", m.w))
	}
	return m.d.Styles.Bad.Render(components.Truncate(msg, m.w)) + "\n" + hint
}

func (m *Model) header() string {
	s := m.d.Styles
	c := m.d.Campaign
	name, host := "campaign", "?"
	if c != nil {
		name, host = c.Name, c.Host
	}
	if m.d.Host != nil {
		host = m.d.Host.Name()
	}
	if m.d.Simulated() {
		host += " " + s.HeaderSim.Render("SIMULATED")
	}
	// The campaign name gives way first, so host, link and clock stay visible.
	tail := " │ host " + host + " " + m.connText() + m.serverText() + " │ " + units.Clock(m.now.Sub(m.start))
	head := s.Header.Render("profdeck") + " │ "
	room := m.w - lipgloss.Width(head) - lipgloss.Width(tail)
	if room < 8 {
		return components.Truncate(head+tail, m.w)
	}
	return head + shortName(name, room) + tail
}

// shortName fits a campaign's name in w cells: a parenthesised remark
// ("(SIMULATED deployment)") goes first, then the end of the name.
func shortName(name string, w int) string {
	if components.Width(name) > w {
		if i := strings.Index(name, " ("); i > 0 {
			name = name[:i]
		}
	}
	return components.Truncate(name, w)
}

func (m *Model) connText() string {
	s := m.d.Styles
	if !m.hasConn {
		if m.d.Host != nil && (m.d.Host.Name() == "local" || m.d.Simulated()) {
			return s.Good.Render("● up")
		}
		return s.Subtle.Render("○ connecting")
	}
	c := m.conn
	switch c.State {
	case "up":
		t := "● up"
		if c.RTTms > 0 {
			t += fmt.Sprintf(" %.0f ms", c.RTTms)
		}
		return s.Good.Render(t)
	case "backoff", "down":
		t := "○ " + c.State
		if c.Retry > 0 {
			t += fmt.Sprintf(" (retry in %.0fs)", c.Retry)
		}
		return s.Warn.Render(t)
	case "failed":
		return s.Bad.Render("✗ failed")
	}
	return s.Subtle.Render("○ " + c.State)
}

// serverText is the server's state after the host's link, e.g.
// " │ server loading" ("" before the server's first event): the link being
// up says nothing of the server.
func (m *Model) serverText() string {
	s := m.d.Styles
	switch m.server {
	case "":
		return ""
	case "ready":
		return " │ server " + s.Good.Render("ready")
	case "loading":
		return " │ server " + s.Warn.Render("loading")
	case "failed":
		return " │ server " + s.Bad.Render("failed")
	}
	return " │ server " + s.Subtle.Render(m.server)
}

// serverState is the server's state after the event d (a ServerEvent, a
// Milestone or a LoadFailure), from was.
func serverState(was string, d any) string {
	switch d := d.(type) {
	case phases.ServerEvent:
		switch d.Action {
		case "start", "restart":
			return "loading"
		case "ready":
			return "ready"
		case "stop", "stopped", "exited":
			return "stopped"
		}
	case phases.Milestone:
		if d.Stage == "ready" {
			return "ready"
		}
	case phases.LoadFailure:
		return "failed"
	}
	return was
}

func (m *Model) tabs() string {
	s := m.d.Styles
	var b strings.Builder
	for i, p := range m.panes {
		label := " " + m.table[i].Key + " " + m.table[i].Title + " "
		if m.marked(i, p) {
			label = " " + m.table[i].Key + " " + m.table[i].Title + "* "
		}
		if i == m.active {
			b.WriteString(s.TabActive.Render(label))
		} else {
			b.WriteString(s.TabInactive.Render(label))
		}
	}
	return components.Truncate(b.String(), m.w)
}

// marked says the tab of pane i has "*": its phase runs, its own run or
// one begun elsewhere (the campaign's run on the Notes pane is its own).
func (m *Model) marked(i int, p common.Component) bool {
	return p.Busy() || m.running.Open(m.table[i].Phase)
}

func (m *Model) statusBar() string {
	s := m.d.Styles
	if m.noting {
		return components.Truncate(m.note.View(), m.w)
	}
	if m.status != "" {
		st := s.Footer
		if m.statusErr {
			st = s.FooterError
		}
		if m.statusFields != nil {
			return st.Render(components.Fields(m.statusFields, " ", m.w))
		}
		return st.Render(components.Truncate(m.status, m.w))
	}
	// "? help" comes first, then the notebook's file name (the folder is
	// in the demo's closing line and the campaign file), then what runs;
	// the pane's name, which the tabs show too, goes last.
	parts := []string{"? help"}
	if m.d.Campaign != nil {
		nb := "notebook " + filepath.Base(m.d.Campaign.Notebook)
		if !m.lastSave.IsZero() {
			nb += " (written " + m.lastSave.Format("15:04:05") + ")"
		}
		parts = append(parts, nb)
	}
	var run []string
	for i, p := range m.panes {
		if m.marked(i, p) { // the tabs mark the same panes with "*"
			run = append(run, m.table[i].Phase)
		}
	}
	if len(run) > 0 {
		parts = append(parts, "* running: "+strings.Join(run, ","))
	}
	if m.campaignStep != "" {
		parts = append(parts, "campaign: "+m.campaignStep)
	}
	parts = append(parts, "pane "+m.table[m.active].Title)
	return s.Footer.Render(components.Truncate(strings.Join(parts, " │ "), m.w))
}

func (m *Model) helpLine() string {
	return components.Truncate(m.help.ShortHelpView(m.helpKeys()), m.w)
}

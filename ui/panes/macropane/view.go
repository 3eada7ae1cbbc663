package macropane

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// Layout constants.
const (
	minChartH = 2 // shrinks to 1 only when nothing else fits
	maxChartH = 8
	minTable  = 3 // level rows the table keeps before charts shrink
	minW      = 40
	minH      = 10
)

// layout is where each block goes for the current size.
type layout struct {
	labelW, chartW, chartH, charts, tableRows int
	strip                                     int // the GPU strip's lines
}

func (m *Model) layout(extra int) layout {
	lw := 22
	if m.w >= 100 {
		lw = 26 // the GPU strip's power line whole, with its span
	} else if m.w < 70 {
		lw = 16
	}
	l := layout{labelW: lw, chartW: max(1, m.w-lw-1)}
	// title, banner(s), axis, server line, progress line; the table
	// (header included) and three charts share the rest.
	fixed := 1 + extra + 1 + 1 + 1
	rest := m.h - fixed
	want := 1 + max(minTable, m.levelCount())
	// The GPU strip, when the charts keep two rows and the table its
	// minimum beside it.
	if g := m.gpu.rows(); g > 0 && rest-g >= 3*minChartH+1+minTable {
		l.strip, rest = g, rest-g
	}
	// A fourth chart, the server's running and waiting requests, when
	// there is room for it at three rows.
	l.charts = 3
	if (rest-want)/4 >= 3 {
		l.charts = 4
	}
	l.chartH = max(minChartH, min(maxChartH, (rest-want)/l.charts))
	if rest-l.charts*l.chartH < 1+minTable {
		l.chartH = max(1, (rest-1-minTable)/l.charts)
	}
	l.tableRows = max(0, rest-l.charts*l.chartH)
	return l
}

// levelCount is how many levels the sweep has (configured), at least the
// number finished.
func (m *Model) levelCount() int {
	n := len(m.levels)
	if m.planned != nil {
		n = max(n, len(m.planned))
	} else if m.d.Campaign != nil {
		n = max(n, len(m.d.Campaign.Macro.Concurrency))
	}
	return n
}

// refresh redraws what changed and caches the view. It runs from Update
// and SetSize, once per batch, so View only returns a string.
func (m *Model) refresh() {
	if !m.dirty && !m.chartsDirty && !m.tableDirty {
		return
	}
	if m.w <= 0 || m.h <= 0 {
		return
	}
	if m.w < minW || m.h < minH {
		m.chartsDirty, m.tableDirty, m.dirty = false, false, false
		lines := make([]string, m.h)
		lines[0] = m.d.Styles.Warn.Render(components.Fit(fmt.Sprintf("Macro needs %d×%d, has %d×%d", minW, minH, m.w, m.h), m.w))
		m.view = strings.Join(lines, "\n")
		return
	}
	banners := m.banners()
	l := m.layout(len(banners))
	if m.chartsDirty {
		cols := m.colsPerSecond(l.chartW)
		for _, c := range append([]*chart{m.tpotChart, m.ttftChart, m.tokChart, m.srvChart}, m.gpu.charts[:]...) {
			c.cols = cols
		}
		m.tpotChart.draw(l.chartW, l.chartH)
		m.ttftChart.draw(l.chartW, l.chartH)
		m.tokChart.draw(l.chartW, l.chartH)
		if l.charts == 4 {
			m.srvChart.draw(l.chartW, l.chartH)
		}
		for _, c := range m.gpu.charts {
			c.draw(l.chartW, 1)
		}
	}
	if m.tableDirty || m.chartsDirty {
		m.tableLines = m.table(l.tableRows)
	}
	m.chartsDirty, m.tableDirty, m.dirty = false, false, false

	var b strings.Builder
	b.Grow(m.w * m.h * 2)
	b.WriteString(m.titleLine())
	for _, line := range banners {
		b.WriteByte('\n')
		b.WriteString(line)
	}
	m.writeCharts(&b, l)
	b.WriteByte('\n')
	b.WriteString(m.serverLine())
	b.WriteByte('\n')
	b.WriteString(m.progressLine())
	for _, line := range m.tableLines {
		b.WriteByte('\n')
		b.WriteString(line)
	}
	// Blank rows below a short table keep the pane its full height.
	for i := len(m.tableLines); i < l.tableRows; i++ {
		b.WriteByte('\n')
	}
	m.view = b.String()
}

// View renders the pane (cached; see refresh).
func (m *Model) View() string {
	m.refresh()
	return m.view
}

func (m *Model) titleLine() string {
	s := m.d.Styles
	state := ""
	switch m.r.State {
	case common.RunIdle:
		// Events of a sweep this pane did not start (a replay, another
		// client) still say where it stands.
		switch {
		case m.cutOff:
			state = "cut short (no end in the journal)"
		case m.cur != nil:
			state = "running"
		case len(m.levels) > 0:
			state = "finished"
		default:
			state = "idle"
		}
	case common.RunRunning:
		switch {
		case m.stopping:
			state = "stopping: requests in flight finish"
		case m.paused():
			state = "PAUSED"
		default:
			state = "running"
		}
	case common.RunCancelling:
		state = "cutting short"
	case common.RunCancelled:
		state = "cut short"
	case common.RunFailed:
		state = "failed"
	default:
		state = "finished"
	}
	left := s.Title.Render("Macro sweep") + " " + s.Subtle.Render("· "+state)
	right := m.pathMark()
	if m.d.Simulated() {
		right = strings.TrimSpace(right + "  " + s.HeaderSim.Render("SIMULATED"))
	}
	return components.Spread(left, right, m.w)
}

// pathMark says in a few words how the load reaches the server and its
// round trip, in the warning style when the path bends the figures.
func (m *Model) pathMark() string {
	p := m.path
	if p == nil || m.w < 60 {
		return ""
	}
	text := "direct"
	switch p.Kind {
	case phases.PathSSH:
		text = "via SSH"
	case phases.PathHost:
		text = "on the host"
	}
	if p.Probes > 0 {
		text += fmt.Sprintf(" · rtt %.2f ms", p.RTTp50ms)
	}
	if m.pathWarn != "" {
		return m.d.Styles.Warn.Render(text)
	}
	return m.d.Styles.Subtle.Render(text)
}

// banners are the lines under the title: the marker input, the client
// self-audit, the plateau, an error, or else what the sweep will do.
func (m *Model) banners() []string {
	s := m.d.Styles
	var out []string
	if m.typing {
		out = append(out, m.input.View())
	}
	out = append(out, m.variantLines()...)
	if cb := m.clientBound(); cb != nil {
		text := fmt.Sprintf("CLIENT-BOUND at %s: %s. This level measured the client, not the server.", phases.LevelName(cb.Concurrency, cb.Rate), cb.Reason)
		out = append(out, s.BannerWarn.Render(components.Fit(text, m.w-2)))
	}
	out = append(out, m.agentLines()...)
	if m.search != nil {
		out = append(out, m.searchLines()...)
	}
	if p := m.plateau; p != nil {
		out = append(out, m.verdictLines(p)...)
	} else if m.slo != nil && m.search == nil {
		text := m.slo.Text
		if components.Width(text) > m.w {
			// The answer first, so a narrow pane keeps it.
			text = m.sloShort() + " (" + m.slo.Spec + ")"
		}
		out = append(out, s.Subtle.Render(components.Fit(text, m.w)))
	}
	if t := m.traceReuseLine(); t != "" {
		out = append(out, s.Subtle.Render(components.Fit(t, m.w)))
	}
	if d := m.disagreement(); d != "" {
		out = append(out, m.wrapped(s.Warn, d)...)
	}
	if n := len(m.errs); n > 0 {
		// The latest distinct error, with what the server said.
		text := fmt.Sprintf("error (%s): %s", m.errLevel[n-1], macro.ErrorLine(m.errs[n-1]))
		if n > 1 {
			text = fmt.Sprintf("%d distinct errors; latest %s", n, text)
		}
		out = append(out, m.wrapped(s.Bad, text)...)
	}
	if m.pathWarn != "" {
		out = append(out, m.wrapped(s.Warn, "path: "+m.pathWarn)...)
	}
	if n := len(m.warns); n > 0 && m.warnTop != "" {
		text := "warning: " + m.warnTop
		if n > 1 {
			text = fmt.Sprintf("%d warnings; latest: %s", n, m.warnTop)
		}
		out = append(out, m.wrapped(s.Warn, text)...)
	}
	if m.r.State == common.RunFailed {
		out = append(out, m.wrapped(s.Bad, failedText(m.r.Err.Error()))...)
	}
	if len(out) == 0 {
		out = append(out, s.Subtle.Render(components.Fit(m.summary(), m.w)))
	}
	return out
}

// variantLines are the variant serving and those to come, and on a tall
// screen the variants table, when the run serves variants.
func (m *Model) variantLines() []string {
	if len(m.variants.Rows) == 0 {
		return nil
	}
	if m.h < 32 {
		return []string{m.d.Styles.Subtle.Render(components.Fit("variants: "+m.variants.Header(), m.w))}
	}
	lines := strings.Split(m.variants.View(m.w), "\n")
	lines[0] = "variants: " + lines[0]
	for i, l := range lines {
		lines[i] = m.d.Styles.Subtle.Render(components.Fit(l, m.w))
	}
	return lines
}

// failedText is the failed sweep's line; when no server answered it says
// first how to start one, since the error's end is cut at 80 columns.
func failedText(err string) string {
	if strings.Contains(err, "cannot reach the server") {
		return "sweep failed: no server answers — start it in pane 1 (press 1, then s), then s here. " + err
	}
	return "sweep failed: " + err
}

// wrapped is a banner's text on up to two rows in style st, so its end
// (often the fix) is not cut at 80 columns.
func (m *Model) wrapped(st lipgloss.Style, text string) []string {
	lines := components.WrapRows(text, m.w, 2)
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return lines
}

// summary says what the sweep does (or will do).
func (m *Model) summary() string {
	c := m.d.Campaign
	if c == nil {
		return "no campaign"
	}
	mc := c.Macro
	levels := mc.Concurrency
	if m.planned != nil {
		levels = m.planned
	}
	span := "C default"
	if len(levels) > 0 {
		span = fmt.Sprintf("C %d…%d", levels[0], levels[len(levels)-1])
	}
	per := fmt.Sprintf("%d req/level", mc.Requests)
	if mc.Duration.Duration > 0 {
		per = mc.Duration.String() + "/level"
	}
	if mc.Rate > 0 {
		span, per = fmt.Sprintf("open loop at %g req/s", mc.Rate), ""
	}
	if mc.Search != "" && mc.SLO != "" {
		span = fmt.Sprintf("search the largest %s meeting %s", mc.Search, mc.SLO)
	}
	text := fmt.Sprintf("%s · %s · in %d / out %d tok → %s", span, per, mc.InputLen, mc.OutputLen, remote.MaskURL(c.Server.URL))
	if m.r.State == common.RunIdle && len(m.levels) == 0 {
		text = m.idleWords() + " · " + text
	}
	return text
}

func (m *Model) serverLine() string {
	s := m.d.Styles
	label := s.Bold.Render("server") + " "
	switch {
	case !m.haveServer:
		return label + s.Subtle.Render(components.Fit("— /metrics is read once a second while the sweep runs", m.w-7))
	case !m.server.Available:
		note := m.server.Note
		if note == "" {
			note = "server metrics unavailable"
		}
		return label + s.Warn.Render(components.Fit(note, m.w-7))
	}
	if m.server.Engine == "sglang" {
		label = s.Bold.Render("server") + " SGLang "
	}
	w := m.w - components.Width(label)
	return label + components.Fit(components.Fields(m.serverFields(), " · ", w), w)
}

// serverFields are the server line's figures, ranked so that at 80
// columns the generation rate goes first (the tok/s chart shows it as
// "srv"), then speculative decoding and the engine count, and the queue,
// the KV cache, preemptions and the prefix-cache hit rate stay.
func (m *Model) serverFields() []components.Field {
	st := m.server
	gen := "gen " + units.Rate(st.GenTokS) + " tok/s"
	if st.IntervalS > 0 && (st.IntervalS < 0.9 || st.IntervalS > 1.5) {
		// Not the usual second (a level's last scrape): a rate over a
		// short span swings with the engine's steps.
		gen += fmt.Sprintf(" over %.1f s", st.IntervalS)
	}
	hit := "prefix hit —"
	if st.CacheHitRate != nil {
		hit = "prefix hit " + units.Pct(*st.CacheHitRate)
	}
	run := units.Thousands(st.Running)
	fields := []components.Field{
		{Text: "running " + run, Short: "run " + run, Rank: 6},
		{Text: "waiting " + units.Thousands(st.Waiting), Short: "wait " + units.Thousands(st.Waiting), Rank: 6},
		{Text: "KV " + units.Pct(st.KVCacheUsage), Rank: 5},
		{Text: "preemptions " + units.Thousands(st.Preemptions), Short: "preempt " + units.Thousands(st.Preemptions), Rank: 5},
		{Text: gen, Rank: 1},
	}
	if st.Engine == "sglang" {
		// SGLang counts no preemptions; it publishes its prefix-cache hit
		// rate instead. Its queue is "queued".
		fields[1] = components.Field{Text: "queued " + units.Thousands(st.Waiting), Rank: 6}
		fields[3] = components.Field{Text: hit, Rank: 4}
	} else if st.CacheHitRate != nil {
		fields = append(fields, components.Field{Text: hit, Rank: 4})
	}
	if st.SpecAcceptRate != nil {
		spec := "spec accept " + units.Pct(*st.SpecAcceptRate)
		if st.SpecAcceptLength != nil {
			spec += fmt.Sprintf(" (len %.2f)", *st.SpecAcceptLength)
		}
		fields = append(fields, components.Field{Text: spec, Rank: 3})
	}
	if st.Engines > 1 {
		fields = append(fields, components.Field{Text: fmt.Sprintf("%d engines", st.Engines), Rank: 3})
	}
	return fields
}

func (m *Model) progressLine() string {
	s := m.d.Styles
	if m.cutShort() {
		return s.Subtle.Render(components.Fit(m.cutOffLine(), m.w))
	}
	if m.cur == nil {
		switch {
		case m.r.State == common.RunIdle && len(m.levels) == 0:
			return s.Subtle.Render(components.Fit(m.idleWords(), m.w))
		case m.r.Active():
			return s.Subtle.Render(components.Fit("preparing: finding the model, calibrating the prompt, one pre-flight request…", m.w))
		}
		return s.Subtle.Render(components.Fit(fmt.Sprintf("%d levels done", len(m.levels)), m.w))
	}
	c := m.cur
	conc := c.Started.Concurrency
	if c.HaveTick && c.Tick.Concurrency > 0 {
		conc = c.Tick.Concurrency
	}
	head := fmt.Sprintf("C=%-4d level %d/%d ", conc, c.Index, max(c.Index, m.levelCount()))
	if c.Started.Runs > 1 {
		head += fmt.Sprintf("run %d/%d ", c.Started.Run, c.Started.Runs)
	}
	t := c.Tick
	tail := fmt.Sprintf(" %3.0f%% · %s · done %d", 100*t.LevelProgress, units.Clock(time.Duration(t.LevelElapsedS*float64(time.Second))), t.Completed)
	if c.Started.Requests > 0 {
		tail += fmt.Sprintf("/%d", c.Started.Requests)
	}
	tail += fmt.Sprintf(" · in flight %d", t.InFlight)
	if t.Failed > 0 {
		tail += fmt.Sprintf(" · %d failed", t.Failed)
	}
	if t.Paused {
		tail += " · PAUSED"
	}
	barW := min(60, m.w-len([]rune(head))-len([]rune(tail)))
	if barW < 8 {
		return components.Fit(head+tail, m.w)
	}
	return s.Bold.Render(head) + m.bar.View(t.LevelProgress, barW) + components.Fit(tail, m.w-len([]rune(head))-barW)
}

// idleWords say what starts the first sweep: the campaign's run when one
// is under way, else s.
func (m *Model) idleWords() string {
	if m.inRun {
		return "no sweep yet — the campaign's run starts it at its step"
	}
	return "no sweep yet — press s to start"
}

// maxColsPerSecond bounds how wide a second is drawn.
const maxColsPerSecond = 4

// colsPerSecond is how many columns a second takes in charts w wide: a
// sweep that fills less than half of them is drawn wider (at most
// maxColsPerSecond), so its seconds fill the charts.
func (m *Model) colsPerSecond(w int) int {
	if m.samples <= 0 {
		return 1
	}
	return max(1, min(maxColsPerSecond, w/m.samples))
}

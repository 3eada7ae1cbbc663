package profilepane

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// short names of the categories, for the kernel table.
var catShort = map[string]string{
	profile.CatGEMM: "gemm", profile.CatAttention: "attn", profile.CatMoE: "moe",
	profile.CatCommunication: "comm", profile.CatOther: "other",
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
	w, h := m.w, m.h
	if w <= 0 {
		w = 78
	}
	if h <= 0 {
		h = 19
	}
	lines := []string{m.titleLine(w)}
	lines = append(lines, m.messageLines(w)...)
	if m.sum == nil || m.Busy() {
		lines = append(lines, m.stepLines(w)...)
	} else {
		lines = append(lines, m.captureLine(w))
	}
	if m.sum != nil && !m.Busy() {
		lines = append(lines, m.summaryLines(w, h-len(lines))...)
	}
	if len(lines) > h {
		lines = lines[:h]
	}
	return strings.Join(lines, "\n")
}

// stateNames say where the capture stands, in the title.
var stateNames = map[common.RunState]string{common.RunIdle: "idle", common.RunRunning: "capturing",
	common.RunCancelling: "cancelling (sending stop_profile)", common.RunFinished: "captured",
	common.RunCancelled: "cancelled", common.RunFailed: "failed"}

func (m *Model) titleLine(w int) string {
	s := m.d.Styles
	state := stateNames[m.r.State]
	if m.r.State == common.RunIdle && m.sum != nil {
		state = "from the journal"
		if m.liveSum {
			state = "captured" // by the campaign's run, not this pane's key
		}
	}
	left := s.Title.Render("Profile") + " " + s.Subtle.Render(state)
	right := ""
	if m.d.Simulated() {
		right = s.HeaderSim.Render("SIMULATED")
	}
	return components.Spread(left, right, w)
}

// messageLines are what the operator should know or do: why the last
// capture failed, or what s does.
func (m *Model) messageLines(w int) []string {
	s := m.d.Styles
	msg := m.msg
	if msg == "" && m.failed != nil {
		msg = "Capture failed at " + m.failed.Step + ": " + m.failed.Error
		if m.failed.ProfilerDisabled {
			msg = m.profilerHelp()
		}
		if m.failed.ServerDown {
			msg = m.downHelp()
		}
	}
	if msg != "" {
		var out []string
		for _, l := range components.Wrap(msg, w) {
			out = append(out, s.Warn.Render(l))
		}
		return out
	}
	if m.r.State == common.RunIdle && m.sum == nil && m.d.Campaign != nil {
		cfg := m.config()
		dir := cfg.ProfilerDir
		if strings.Contains(dir, "{uid}") {
			dir += " ({uid}: the host user's id)"
		}
		text := fmt.Sprintf("s captures one window per level (C=%s): a steady load, start_profile, %d engine steps, stop_profile, "+
			"then reads %s on %s. The server must run with the torch profiler.", joinInts(cfg.Concurrency), cfg.Steps, dir, hostName(m))
		var out []string
		for _, l := range components.Wrap(text, w) {
			out = append(out, s.Subtle.Render(l))
		}
		return out
	}
	return nil
}

// stepLines list the capture's steps, the running one with a spinner and
// its elapsed time.
func (m *Model) stepLines(w int) []string {
	s := m.d.Styles
	now := float64(m.d.Now().UnixNano()) / 1e9
	var out []string
	for i, st := range m.steps {
		mark, el := "✓", st.elapsedS
		live := !st.done && i == len(m.steps)-1 && m.Busy()
		if live {
			mark = spinner[m.frame%len(spinner)]
			if e := now - st.started; e > el {
				el = e
			}
		} else if !st.done {
			mark = "·"
		}
		text := components.Truncate(fmt.Sprintf("%s %-13s %7s  %s", mark, st.name, units.ExactDuration(el), st.detail), w)
		switch {
		case live:
			out = append(out, s.Bold.Render(text))
		case st.done:
			out = append(out, s.Good.Render(text[:len(mark)])+text[len(mark):])
		default:
			out = append(out, s.Subtle.Render(text))
		}
	}
	return out
}

// captureLine sums up the capture that the summary came from.
func (m *Model) captureLine(w int) string {
	sum := m.sum
	parts := []string{}
	if sum.Level > 0 {
		parts = append(parts, fmt.Sprintf("C=%d%s window", sum.Level, windowTag(sum.Window)))
	} else if sum.Requests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests at C=%s", sum.Requests, joinInts(sum.Concurrency)))
	}
	if sum.StopS > 0 {
		parts = append(parts, fmt.Sprintf("stop_profile %s", units.ExactDuration(sum.StopS)))
	}
	src := sum.Source
	if i := strings.Index(src, " ("); i > 0 {
		src = src[:i]
	}
	parts = append(parts, src)
	return m.d.Styles.Subtle.Render(components.Truncate(strings.Join(parts, " · "), w))
}

// summaryLines are the totals, the category bars and the kernel table.
func (m *Model) summaryLines(w, h int) []string {
	s := m.d.Styles
	sum := m.sum
	var out []string
	head := fmt.Sprintf("GPU %s in %d kernels · communication %.1f%% of GPU time", units.Us(sum.TotalCUDAUs), sum.KernelCount, 100*sum.CommunicationShare)
	out = append(out, s.Bold.Render(components.Truncate(head, w)))
	out = append(out, m.perStepLines(w)...)
	if l := m.levelsLine(w); l != "" {
		out = append(out, l)
	}
	barW := w - 14 - 10 - 8
	if barW > 50 {
		barW = 50
	}
	for _, c := range profile.Categories {
		v := sum.Categories[c]
		frac := 0.0
		if sum.TotalCUDAUs > 0 {
			frac = v / sum.TotalCUDAUs
		}
		b := components.Bar{Full: s.BarFull, Empty: s.BarEmpty}
		if c == profile.CatCommunication {
			b.Full = s.ChartAlt
		}
		bar := ""
		if barW > 0 {
			bar = b.View(frac, barW) + " "
		}
		out = append(out, fmt.Sprintf("%-13s %s%9s %5.1f%%", c, bar, units.Us(v), 100*frac))
	}
	rows := h - len(out) - 1
	if rows < 1 || len(sum.Top) == 0 {
		return out
	}
	nameW := w - 44
	if nameW < 10 {
		nameW = 10
	}
	out = append(out, s.TableHeader.Render(components.Truncate(fmt.Sprintf("%9s %6s %9s %8s %-5s  %s", "self", "%GPU", "µs/step", "calls", "cat", "kernel (top "+fmt.Sprint(len(sum.Top))+")"), w)))
	m.kernels.SetSize(len(sum.Top), rows)
	first, end := m.kernels.Visible()
	for _, k := range sum.Top[first:end] {
		per := "-"
		if sum.DecodeSteps > 0 {
			per = units.Us(k.SelfCUDAUs / float64(sum.DecodeSteps))
		}
		pct := 0.0
		if sum.TotalCUDAUs > 0 {
			pct = 100 * k.SelfCUDAUs / sum.TotalCUDAUs
		}
		line := fmt.Sprintf("%9s %5.1f%% %9s %8d %-5s  %s", units.Us(k.SelfCUDAUs), pct, per, k.Calls, catShort[k.Category], profile.Shorten(k.Name, nameW))
		out = append(out, components.Truncate(line, w))
	}
	if more := len(sum.Top) - end; more > 0 && len(out) > 0 {
		out[len(out)-1] = components.Truncate(out[len(out)-1], w-8) + s.Subtle.Render(fmt.Sprintf(" ↓%d more", more))
	}
	return out
}

// perStepLines is the time per decode step and where the step count came
// from, on a second line when one is too narrow for both.
func (m *Model) perStepLines(w int) []string {
	sum := m.sum
	if sum == nil || sum.DecodeSteps <= 0 {
		return nil
	}
	src := "estimated"
	switch {
	case strings.Contains(sum.DecodeStepsSource, "counted in the trace"):
		src = "in the trace"
	case strings.Contains(sum.DecodeStepsSource, "/metrics"):
		src = "from /metrics"
	}
	line := "per decode step: comm " + units.Us(sum.CommPerStepUs)
	if tpot := m.tpot; tpot > 0 {
		line += fmt.Sprintf(" (%.0f%% of mean TPOT %.2fms at C=%d)", 100*sum.CommPerStepUs/(tpot*1000), tpot, max(sum.Level, 1))
	}
	line += " of " + units.Us(sum.GPUPerStepUs) + " GPU"
	steps := fmt.Sprintf("%d steps %s", sum.DecodeSteps, src)
	if len([]rune(line))+3+len([]rune(steps)) <= w {
		return []string{line + " · " + steps}
	}
	return []string{components.Truncate(line, w), components.Truncate("  over "+steps, w)}
}

// kernelRows is how many kernel rows fit at the current size.
func (m *Model) kernelRows() int {
	w := m.w
	if w <= 0 {
		w = 78
	}
	// title, message, capture line, totals, categories, table header
	used := 1 + len(m.messageLines(w)) + 1 + 1 + len(profile.Categories) + 1 + len(m.perStepLines(w))
	if m.levelsLine(w) != "" {
		used++
	}
	return m.h - used
}
func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}

func hostName(m *Model) string {
	if m.d.Host == nil {
		return "the host"
	}
	return m.d.Host.Name()
}

// levelsLine compares the captured levels: GPU time per step and the
// communication share at each, the shown one marked ("l" switches).
func (m *Model) levelsLine(w int) string {
	if len(m.levels) < 2 || m.sum == nil {
		return ""
	}
	var parts []string
	for _, l := range m.levels {
		p := fmt.Sprintf("C=%d%s %s/step comm %.0f%%", l.Level, windowTag(l.Window), units.Us(l.GPUPerStepUs), 100*l.CommunicationShare)
		if l.Level == m.sum.Level && l.Window == m.sum.Window {
			p = "▶" + p
		}
		parts = append(parts, p)
	}
	return m.d.Styles.Subtle.Render(components.Truncate(strings.Join(parts, " · ")+" (l: next)", w))
}

// windowTag marks a window of the sweep's own traffic (" steady"); a
// decode-only window is unmarked, as windows always were.
func windowTag(kind string) string {
	if kind == phases.WindowSteady {
		return " steady"
	}
	return ""
}

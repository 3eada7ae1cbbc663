package loadpane

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// View renders the pane, exactly filling its size: drawn again only when
// something changed since (a batch of events, a key, a resize).
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
	if m.fullLog {
		m.log.SetSize(len(m.logs), m.logRows())
		lines = append(lines, m.logLines(w, h-2, m.log.Offset)...)
		lines = append(lines, m.d.Styles.Subtle.Render(components.Truncate(fmt.Sprintf("full log: %d lines · j/k scroll · l or esc back", len(m.logs)), w)))
		return strings.Join(lines, "\n")
	}
	banner := m.bannerLines(w)
	bottom := m.bottomLines(w)
	fixed := 1 + 2 + len(banner) + len(bottom) // title, shard + milestones, banner, question
	room := h - fixed
	gpuRows := m.gpuRows(w)
	if m.compact(len(gpuRows), room-3) {
		gpuRows = m.nodeRows(w)
	} else if len(gpuRows) > 8 && len(gpuRows) > room-3 && w >= 2*36+components.Width(columnGap) {
		// Many GPUs (several hosts): two columns, leaving room for the log.
		cw := (w - components.Width(columnGap)) / 2
		gpuRows = twoColumns(m.gpuRows(cw), cw)
	}
	if len(gpuRows) > room {
		// Too many GPUs for the height: keep what fits and say so.
		keep := max(1, room-1)
		more := len(gpuRows) - keep
		gpuRows = append(gpuRows[:keep], m.d.Styles.Subtle.Render(fmt.Sprintf("… %d more GPUs (a taller terminal shows them)", more)))
	}
	lines = append(lines, gpuRows...)
	lines = append(lines, m.shardLine(w), m.milestoneLine(w))
	lines = append(lines, banner...)
	if n := h - len(lines) - len(bottom); n > 0 {
		lines = append(lines, m.logLines(w, n, 0)...)
	}
	lines = append(lines, bottom...)
	if len(lines) > h {
		lines = lines[:h]
	}
	return strings.Join(lines, "\n")
}

func (m *Model) titleLine(w int) string {
	s := m.d.Styles
	st, ok := m.states[m.host()]
	status := "waiting for the first nvidia-smi reading"
	style := s.Subtle
	if ok {
		status = phases.StageLabel(st.Stage) + " " + units.Duration(st.ElapsedS)
		if _, ok := m.milestones[st.Stage]; ok && st.Stage != phases.StageReady {
			// The time in the stage, as its milestone shows it, then the whole load's.
			status = phases.StageLabel(st.Stage) + " " + units.Duration(m.stageTook(st.Stage, st)) +
				" · " + units.Duration(st.ElapsedS) + " in all"
		}
		switch {
		case st.Ready:
			status, style = "SERVING (/health 200) · loaded in "+units.Duration(m.readyAt(st)), s.Good
		case st.Failure != nil:
			style = s.Bad
		case st.Stall != nil:
			style = s.Bad
		case st.Stage == phases.StageStopped:
			status, style = "stopped", s.Warn
		case m.down(st):
			status, style = "down: nothing serves — s starts the server", s.Warn
		default:
			style = s.Bold
		}
	}
	if m.op != "" {
		status = m.op + " the server… · " + status
	}
	head := "Server/Load"
	if h := m.host(); h != "" {
		head += " · " + h
		if len(m.hosts) > 1 {
			head += fmt.Sprintf(" +%d", len(m.hosts)-1)
		}
	}
	switch {
	case m.engine == "sglang":
		head += " · SGLang"
	case m.version != "":
		head += " · vLLM " + m.version
	}
	sim := ""
	if m.d.Simulated() {
		sim = "SIMULATED"
	}
	head = components.Truncate(head, w)
	avail := w - components.Width(head) - 1
	if sim != "" {
		avail -= len(sim) + 1
	}
	status = components.Truncate(status, max(0, avail))
	left := s.Title.Render(head) + " " + style.Render(status)
	if sim == "" {
		return left
	}
	pad := w - components.Width(head) - 1 - components.Width(status) - len(sim)
	return left + strings.Repeat(" ", max(1, pad)) + s.HeaderSim.Render(sim)
}

// readyAt is how long the load took to become ready.
func (m *Model) readyAt(st phases.LoadState) float64 {
	if at, ok := m.milestones[phases.StageReady]; ok {
		return at
	}
	return st.ElapsedS
}

// bannerLines is the red banner: a stall or a failure and its evidence.
func (m *Model) bannerLines(w int) []string {
	s := m.d.Styles
	st := m.bannerState()
	f := st.Failure
	if f == nil {
		f = m.failure
	}
	diag := m.diagLines(st, w)
	switch {
	case f != nil:
		head := fmt.Sprintf("FAILED: %s", failureHead(f))
		if f.Node != "" {
			head = fmt.Sprintf("FAILED on %s: %s", f.Node, failureHead(f))
		}
		if f.Rank >= 0 {
			head += fmt.Sprintf(" (rank %d)", f.Rank)
		}
		if f.PID > 0 {
			head += fmt.Sprintf(" (pid %d)", f.PID)
		}
		ev := enginelog.Message(f.Line)
		if ev == "" {
			ev = f.Line
		}
		out := []string{s.Banner.Render(components.Truncate(head, w-2))}
		if n := len(f.Tail); n > 1 {
			// An exit: the log's last lines before the last one.
			for _, l := range f.Tail[max(0, n-1-exitTailShown) : n-1] {
				out = append(out, s.Subtle.Render(components.Truncate("  "+l, w)))
			}
		}
		return append(append(out, s.Bad.Render(components.Truncate("» "+ev, w))), diag...)
	case st.Stall != nil:
		ev := st.Stall.Line
		if ev == "" {
			ev = "no log line since the load began"
		}
		if msg := enginelog.Message(ev); msg != "" {
			ev = msg
		}
		out := []string{s.Banner.Render(components.Truncate(load.StallText(st.Stall), w-2)), s.Bad.Render(components.Truncate("» last log: "+ev, w))}
		if st.Stall.Waits != "" {
			// The log's own stall warnings (shm broadcast, NCCL waits).
			out = append(out, s.Bad.Render(components.Truncate("» the log says: "+st.Stall.Waits, w)))
		}
		return append(out, diag...)
	}
	return diag
}

// exitTailShown is how many of an exit's last log lines the banner shows
// above the last one.
const exitTailShown = 3

// failureHead names a failure, when it came and the part that failed:
// "the engine core died while serving", "CUDA out of memory (worker)".
func failureHead(f *phases.LoadFailure) string {
	name := failureName(f.Kind)
	if f.When == vllmlog.WhenServing {
		if f.Kind == vllmlog.FailEngineFailed {
			name = "the engine core died"
		}
		name += " while serving"
	}
	if f.Component != "" && f.Kind != vllmlog.FailEngineFailed {
		name += " (" + strings.ReplaceAll(f.Component, "_", " ") + ")"
	}
	return name
}

func failureName(kind string) string {
	switch kind {
	case vllmlog.FailOOM:
		return "CUDA out of memory"
	case vllmlog.FailNCCL:
		return "NCCL error"
	case vllmlog.FailWorkerDied:
		return "a worker died"
	case vllmlog.FailEngineFailed:
		return "the engine core failed to start"
	case vllmlog.FailTimeout:
		return "loading timed out"
	case vllmlog.FailDevice:
		return "a device (GPU/NPU) error"
	case vllmlog.FailExited:
		return "the server process exited during its load"
	case vllmlog.FailUnknown:
		return "an error"
	}
	return kind
}

// logLines is the last n relevant log lines, skip lines up from the end.
func (m *Model) logLines(w, n, skip int) []string {
	s := m.d.Styles
	if n <= 0 {
		return nil
	}
	end := max(0, len(m.logs)-skip)
	start := max(0, end-n)
	var out []string
	for _, e := range m.logs[start:end] {
		text := components.Truncate(e.text, w)
		switch e.line.Level {
		case "ERROR", "CRITICAL":
			out = append(out, s.Bad.Render(text))
		case "WARNING", "NOTE":
			out = append(out, s.Warn.Render(text))
		case "SERVER":
			out = append(out, s.Bold.Render(text))
		default:
			out = append(out, s.Subtle.Render(text))
		}
	}
	if len(out) == 0 && skip == 0 {
		out = append(out, s.Subtle.Render(components.Truncate("no relevant log lines yet (following "+m.logPath()+")", w)))
	}
	return out
}

func (m *Model) logPath() string {
	if m.server != nil {
		return m.server.LogPath()
	}
	if m.d.Campaign != nil {
		return m.d.Campaign.NodeLog(0)
	}
	return campaign.DefaultLogPath
}

// bottomLines is the open question: one line, or two when it is too long
// for one (the restart's says what it costs and how the profiler is turned
// on). The answer keys always show, whatever the width.
func (m *Model) bottomLines(w int) []string {
	if m.confirm == nil {
		return nil
	}
	st := m.d.Styles.BannerWarn
	const keys = " (y/n)"
	p := m.confirm.prompt
	if components.Width(p)+len(keys) <= w-2 {
		return []string{st.Render(p + keys)}
	}
	// Break at the last space that leaves the first line within the width.
	r := []rune(p)
	cut := min(len(r), w-2)
	for cut > 0 && r[cut-1] != ' ' {
		cut--
	}
	if cut == 0 {
		return []string{st.Render(components.Truncate(p, w-2-len(keys)) + keys)}
	}
	first := strings.TrimRight(string(r[:cut]), " ")
	return []string{st.Render(first), st.Render(components.Truncate(string(r[cut:]), w-2-len(keys)) + keys)}
}

// rankList writes ranks compactly for a log line: "r3 ", "r0-7 ", "r0,2 ".
func rankList(ranks []int) string {
	switch len(ranks) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("r%d ", ranks[0])
	}
	sorted := append([]int(nil), ranks...)
	sort.Ints(sorted)
	return "r" + strings.TrimPrefix(load.GPUList(sorted), "GPUs ") + " "
}

// columnGap parts the two columns of GPU rows, so that the right one's
// "GPU0" does not read as the end of the left one's "% of GPU".
const columnGap = " │ "

// twoColumns lays rows out in two columns of width w, top to bottom.
func twoColumns(rows []string, w int) []string {
	half := (len(rows) + 1) / 2
	out := make([]string, half)
	for i := range half {
		left := rows[i]
		if pad := w - lipgloss.Width(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		out[i] = left
		if i+half < len(rows) {
			out[i] += columnGap + rows[i+half]
		}
	}
	return out
}

// diagLines are the diagnosis of the node the banner names (else the
// latest): its verdict and the first piece of evidence or hint (the full
// list is in the notebook and the full log).
func (m *Model) diagLines(banner phases.LoadState, w int) []string {
	s := m.d.Styles
	dg := m.diag
	if d, ok := m.nodeDiag[banner.Host]; ok {
		dg = d
	}
	switch {
	case dg != nil:
		why := "why: "
		if dg.Node != "" {
			why = "why (" + dg.Node + "): "
		}
		out := []string{s.Warn.Render(components.Truncate(why+dg.Verdict, w))}
		if len(dg.Why) > 0 {
			out = append(out, s.Subtle.Render(components.Truncate("  · "+dg.Why[0], w)))
		} else if len(dg.Hints) > 0 {
			out = append(out, s.Subtle.Render(components.Truncate("  "+dg.Hints[0], w)))
		}
		return out
	case m.diagnosing:
		return []string{s.Subtle.Render(components.Truncate("why: diagnosing (sampling processes, GPUs, stacks)…", w))}
	}
	return nil
}

// down is true while no server runs: nothing started from this pane, no
// milestone, no shard bar and no GPU memory in use; the watcher's
// "starting" then counts the time since it began to look, not a load.
func (m *Model) down(st phases.LoadState) bool {
	if m.op != "" || st.Ready || st.Stage != phases.StageStarting || len(m.milestones) > 0 || st.ShardsTotal > 0 {
		return false
	}
	for _, g := range st.GPUs {
		if !g.Known || g.UsedGiB >= 1 {
			return false
		}
	}
	return true
}

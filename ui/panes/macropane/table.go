package macropane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// rowFmt lays out one row of the levels table (64 cells, so a flag still
// fits in 78).
const rowFmt = "%4s %6s %7s %8s %6s %8s %6s %7s %4s"

// tableCols are the levels table's optional columns, as the width allows.
type tableCols struct {
	server bool // the server's columns
	gpu    bool // the GPUs' power and energy
	sig    bool // the server's signals (prefix cache, speculative decoding)
	trace  bool // a replayed trace's implied prefix reuse, beside the hit rate
	sglang bool // SGLang's queue is "queued", and it counts no preemptions
	agents bool // a level ran over load agents: how many
}

// tableHead is the levels table's header line and the columns it has.
func (m *Model) tableHead() (string, tableCols) {
	c := tableCols{agents: m.hasAgents()}
	w := m.w // the width left beside the agents' column
	if c.agents {
		w -= len(fmt.Sprintf(agentsFmt, ""))
	}
	c.server, c.gpu, c.sig, c.sglang = w >= 112, w >= 120, w >= 140, m.server.Engine == "sglang"
	c.trace = c.sig && w >= 148 && m.replayed()
	head := fmt.Sprintf(rowFmt, "C", "req/s", "tok/s", "TTFT p50", "p99", "TPOT p50", "p99", "ITL p99", "fail")
	if c.agents {
		head += fmt.Sprintf(agentsFmt, "agts")
	}
	if c.server {
		wait := "wait"
		if c.sglang {
			wait = "queued"
		}
		head += fmt.Sprintf(" %7s %6s %6s %7s %9s", "srv run", wait, "KV max", "preempt", "srv tok/s")
	}
	if c.gpu {
		head += fmt.Sprintf(gpuFmt, "W total", "J/tok")
	}
	if c.sig {
		head += fmt.Sprintf(sigFmt, "pfx hit", "spec acc")
	}
	if c.trace {
		head += fmt.Sprintf(traceFmt, "implied")
	}
	return head, c
}

// traceFmt lays out a replayed trace's implied prefix reuse: the share of
// its input tokens its hash ids say a prefix cache could hold, read
// beside the server's hit rate.
const traceFmt = " %7s"

// replayed reports whether a finished level replayed a trace.
func (m *Model) replayed() bool {
	for _, lv := range m.levels {
		if lv.Schedule != nil && lv.Schedule.TraceSpeed > 0 {
			return true
		}
	}
	return false
}

// traceReuseLine is, on a screen too narrow for the table's implied
// column, the last replayed level's prefix-cache hit rate beside the
// reuse the trace implies, e.g. "replay at 2×: prefix cache hit 83%, the
// trace implies 84%" ("" otherwise).
func (m *Model) traceReuseLine() string {
	if _, cols := m.tableHead(); cols.trace {
		return ""
	}
	for i := len(m.levels) - 1; i >= 0; i-- {
		lv := m.levels[i]
		sc := lv.Schedule
		if sc == nil || sc.TraceSpeed <= 0 {
			continue
		}
		if sc.TraceReuse == nil {
			return ""
		}
		hit := "—"
		if sv := lv.Server; sv != nil && sv.PrefixCacheHitRate != nil {
			hit = units.Pct(*sv.PrefixCacheHitRate)
		}
		return fmt.Sprintf("replay at %s: prefix cache hit %s, the trace implies %s", levelCell(lv), hit, units.Pct(*sc.TraceReuse))
	}
	return ""
}

func traceCell(sc *phases.Schedule) string {
	if sc == nil || sc.TraceReuse == nil {
		return fmt.Sprintf(traceFmt, "—")
	}
	return fmt.Sprintf(traceFmt, units.Pct(*sc.TraceReuse))
}

// levelCell is a level's first cell: its concurrency, or a trace's
// replay speed.
func levelCell(lv phases.LevelResult) string {
	if sc := lv.Schedule; sc != nil && sc.TraceSpeed > 0 {
		return strconv.FormatFloat(sc.TraceSpeed, 'g', 3, 64) + "×"
	}
	return strconv.Itoa(lv.Concurrency)
}

// table renders the finished levels, at most rows lines including the
// header, following the newest unless scrolled.
func (m *Model) table(rows int) []string {
	if rows < 1 {
		return nil
	}
	s := m.d.Styles
	head, cols := m.tableHead()
	out := []string{s.TableHeader.Render(components.Fit(head, m.w))}
	body := rows - 1
	if body <= 0 {
		return out
	}
	if len(m.levels) == 0 {
		return append(out, s.Subtle.Render(components.Fit("      finished levels appear here", m.w)))
	}
	m.levelList.SetSize(len(m.levels), body)
	first, _ := m.levelList.Visible()
	type levelKey struct {
		c    int
		rate float64
	}
	bound := map[levelKey]bool{}
	for _, a := range m.audits {
		bound[levelKey{a.Concurrency, a.Rate}] = true
	}
	for i := first; i < len(m.levels) && len(out) <= body; i++ {
		out = append(out, m.levelRow(m.levels[i], cols, bound[levelKey{m.levels[i].Concurrency, m.levels[i].Rate}]))
	}
	if n := len(m.levels) - first - (len(out) - 1); n > 0 || first > 0 {
		// Say that there is more, on the header line.
		more := fmt.Sprintf(" [%d–%d of %d, j/k]", first+1, first+len(out)-1, len(m.levels))
		out[0] = s.TableHeader.Render(components.Fit(components.Fit(head, max(0, m.w-len([]rune(more))))+more, m.w))
	}
	return out
}

// levelRow is one finished level's row, with its flags, styled by the most
// telling one; bound is true when the client limited the level.
func (m *Model) levelRow(lv phases.LevelResult, cols tableCols, bound bool) string {
	s := m.d.Styles
	line := fmt.Sprintf(rowFmt, levelCell(lv), units.Rate(lv.RequestThroughput),
		units.Thousands(lv.OutputThroughput), units.Ms(lv.MedianTTFTms), units.Ms(lv.P99TTFTms), units.Ms(lv.MedianTPOTms),
		units.Ms(lv.P99TPOTms), units.Ms(lv.P99ITLms), strconv.Itoa(lv.Failed))
	if cols.agents {
		line += agentsCell(lv)
	}
	if cols.server {
		line += serverCols(lv.Server, cols.sglang)
	}
	if cols.gpu {
		line += gpuCells(lv.GPU)
	}
	if cols.sig {
		line += signalCells(lv.Server)
	}
	if cols.trace {
		line += traceCell(lv.Schedule)
	}
	var flags []string
	style := s.Input
	if m.plateau != nil && m.plateau.Concurrency == lv.Concurrency {
		flags, style = append(flags, "◀ plateau"), s.Good
	}
	if lv.ClientBound || bound {
		flags, style = append(flags, "client-bound"), s.Warn
	}
	if g := lv.GPU; g != nil && g.Throttle != "" {
		flags = append(flags, g.Throttle+"-throttled")
	}
	if f := levelFlag(lv); f != "" {
		flags = append(flags, f)
	}
	if partial(lv) {
		flags, style = append(flags, "partial"), s.Warn
	}
	if lv.Few() {
		flags, style = append(flags, fmt.Sprintf("few: %d req", lv.Completed)), s.Warn
	}
	if lv.Failed > 0 && len(flags) == 0 {
		style = s.Bad
	}
	flag := ""
	if len(flags) > 0 {
		flag = " " + strings.Join(flags, ", ")
		if len([]rune(line+flag)) > m.w {
			flag = " " + shortFlags(flags)
		}
	}
	return style.Render(components.Fit(line+flag, m.w))
}

// shortFlags writes a level's flags in few cells, for a narrow screen.
func shortFlags(flags []string) string {
	short := map[string]string{"◀ plateau": "◀", "client-bound": "bound", "steered": "steer",
		"power-throttled": "pwr", "thermal-throttled": "therm", "power+thermal-throttled": "pwr+th",
		"paused": "pause", "stopped early": "stop", "partial": "part"}
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = f
		if s, ok := short[f]; ok {
			out[i] = s
		} else if strings.HasPrefix(f, "few: ") {
			out[i] = "few" // how few, where the whole flag fits
		}
	}
	return strings.Join(out, ",")
}

// levelFlag names what the operator did to a level (its notes say more
// in the journal): steered, paused, stopped or cut short.
func levelFlag(lv phases.LevelResult) string {
	for _, n := range lv.Notes {
		switch {
		case strings.HasPrefix(n, phases.LiveChangePrefix):
			return "steered"
		case strings.HasPrefix(n, phases.PausedPrefix):
			return "paused"
		case strings.HasPrefix(n, "stopped early"), strings.HasPrefix(n, "cancelled"):
			return "stopped early"
		}
	}
	return ""
}

// serverCols are a level's server cells; an engine that counts no
// preemptions (SGLang) shows "—" for them, not 0.
func serverCols(sl *phases.ServerLevel, noPreempt bool) string {
	if sl == nil || !sl.Available {
		return fmt.Sprintf(" %7s %6s %6s %7s %9s", "—", "—", "—", "—", "—")
	}
	preempt := units.Thousands(sl.Preemptions)
	if noPreempt {
		preempt = "—"
	}
	return fmt.Sprintf(" %7s %6s %6s %7s %9s", units.Rate(sl.MeanRunning), units.Rate(sl.MeanWaiting), units.Pct(sl.MaxKVCacheUsage),
		preempt, units.Thousands(sl.GenerationTokS))
}

// gpuFmt lays out a level's GPU cells: mean power of all GPUs together (the
// words of phases.PowerMean), and energy
// per output token.
const gpuFmt = " %7s %6s"

func gpuCells(g *phases.GPULevel) string {
	if g == nil || g.Samples == 0 || g.NoReadings {
		return fmt.Sprintf(gpuFmt, "—", "—")
	}
	j := "—"
	if g.JPerOutputToken > 0 {
		j = units.Rate(g.JPerOutputToken)
	}
	return fmt.Sprintf(gpuFmt, units.Thousands(g.MeanPowerW), j)
}

// sigFmt lays out a level's server signals: the prefix cache's hit rate,
// and speculative decoding's acceptance.
const sigFmt = " %7s %8s"

func signalCells(sl *phases.ServerLevel) string {
	hit, spec := "—", "—"
	if sl != nil && sl.PrefixCacheHitRate != nil {
		hit = units.Pct(*sl.PrefixCacheHitRate)
	}
	if sl != nil && sl.SpecAcceptRate != nil {
		spec = units.Pct(*sl.SpecAcceptRate)
	}
	return fmt.Sprintf(sigFmt, hit, spec)
}

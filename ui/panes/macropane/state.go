package macropane

import (
	"fmt"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/ui/common"
)

// mark is something pinned to the time axis: a level start, the plateau,
// or an operator's marker. At is the sample index it belongs to.
type mark struct {
	At    int
	Label string
	Kind  markKind
}

type markKind int

const (
	markLevel markKind = iota
	markPlateau
	markUser
)

// level is the level now running.
type level struct {
	Started   phases.LevelStarted
	Index     int // 1-based position in the sweep
	Tick      phases.MacroTick
	HaveTick  bool
	StartedAt time.Time
}

// apply folds one event of the macro phase into the pane's state. It
// reports whether the charts got a new sample.
func (m *Model) apply(ev phases.Event) (sampled bool) {
	m.timeline(ev)
	switch d := ev.Data.(type) {
	case phases.LevelStarted:
		m.levelStarted(d, ev.Time)
	case phases.MacroTick:
		m.tick(d, ev.Time)
		return true
	case phases.MacroSeries:
		// A level whose ticks this pane did not see (a reopened
		// journal) draws its seconds from the series.
		if m.levelTicks == 0 {
			m.drawSeries(d)
			return d.Len() > 0
		}
	default:
		m.applyOther(ev)
	}
	return false
}

// timeline starts a new timeline with a new sweep's first result, here or
// elsewhere (the run, a replay): one that ends before it measured anything
// (no server) leaves the last sweep's on screen.
func (m *Model) timeline(ev phases.Event) {
	switch ev.Data.(type) {
	case phases.PhaseStarted:
		m.newSweep = true
	case phases.PhaseFinished, phases.Marker:
	default:
		if m.newSweep {
			m.newSweep = false
			m.resetRun()
		}
	}
}

// levelName is how the pane names a level: its concurrency, or its rate.
func levelName(concurrency int, rate float64) string {
	if concurrency == 0 && rate > 0 {
		return fmt.Sprintf("%g/s", rate)
	}
	return fmt.Sprintf("C=%d", concurrency)
}

// levelStarted makes d the level now running and marks its start.
func (m *Model) levelStarted(d phases.LevelStarted, at time.Time) {
	m.asked.conc, m.levelTicks = 0, 0
	m.cur = &level{Started: d, Index: len(m.levels) + 1, StartedAt: at}
	if d.Run <= 1 { // a level's repeated runs share its mark
		m.addMark(mark{At: m.samples, Label: levelName(d.Concurrency, d.Rate), Kind: markLevel})
	}
}

// tick folds a second of the level running: the progress line and a sample
// on every chart.
func (m *Model) tick(d phases.MacroTick, at time.Time) {
	// A tick of a sweep that has ended (it arrives after the end
	// message) moves the charts, not the progress line.
	if m.cur == nil && (m.r.State == common.RunIdle || m.r.Active()) {
		m.cur = &level{Index: len(m.levels) + 1, StartedAt: at}
	}
	if m.cur != nil {
		m.cur.Tick, m.cur.HaveTick = d, true
	}
	if p := m.asked.pause; p != nil && *p == d.Paused {
		m.asked.pause = nil
	}
	if d.Concurrency == m.asked.conc {
		m.asked.conc = 0
	}
	m.levelTicks++
	m.tpot50.push(d.TPOTp50ms)
	m.tpot99.push(d.TPOTp99ms)
	m.ttft.push(d.TTFTp50ms)
	m.toks.push(d.OutputTokS)
	// The server's figures join the client's second by second: the
	// latest scrape, when it is recent.
	var run, queue float64
	if m.server.Available && at.Sub(m.server.At) < 3*time.Second {
		run, queue = m.server.Running, m.server.Running+m.server.Waiting
	}
	m.srvRun.push(run)
	m.srvQueue.push(queue)
	m.gpu.sample(at)
	m.samples++
}

// applyOther folds the events that add no sample: the server's and the
// GPUs' figures, warnings, results, markers.
func (m *Model) applyOther(ev phases.Event) {
	m.variants.Add(ev)
	switch d := ev.Data.(type) {
	case phases.ServerStats:
		m.server, m.haveServer = d, true
		if m.server.At.IsZero() {
			m.server.At = ev.Time
		}
	case phases.GPUTelSample:
		m.gpu.last, m.gpu.have = d, true
	case phases.GPUTelSource:
		if m.readBack {
			break // a sweep read back: no strip (see drawSeries)
		}
		v := d
		m.gpu.src = &v
		m.chartsDirty = true // the strip takes rows from the charts
	case phases.MacroWarning:
		m.warns = append(m.warns, d.Text)
		if !macro.IsPathWarning(d.Text) { // the path has its own line
			m.warnTop = d.Text
		}
	case phases.MacroPath:
		p := d
		m.path = &p
		m.notePath()
	case phases.LevelResult:
		m.levels = append(m.levels, d)
		m.noteLevel(d)
		m.notePath()
		m.cur = nil
		m.tableDirty = true
	case phases.Plateau:
		p := d
		m.plateau = &p
		m.markPlateau(d.Concurrency)
		m.tableDirty = true
	case phases.SLOMet:
		v := d
		m.slo = &v
	case phases.Search:
		v := d
		m.search = &v
	case phases.ClientBound:
		m.audits = append(m.audits, d)
		m.tableDirty = true
	case phases.Marker:
		if d.Pane == phases.Macro {
			m.addMark(mark{At: m.samples, Label: d.Label, Kind: markUser})
		}
	}
}

// noteLevel keeps a finished level's warnings and each distinct error.
func (m *Model) noteLevel(d phases.LevelResult) {
	name := levelName(d.Concurrency, d.Rate)
	top := ""
	for _, w := range d.Warnings {
		m.warns = append(m.warns, name+": "+w)
		if top == "" && !macro.IsPathWarning(w) { // the path has its own line
			top = name + ": " + w
		}
	}
	if top != "" {
		m.warnTop = top
	}
next:
	for _, e := range d.FailureExamples {
		for i := range m.errs {
			if macro.ErrorKey(m.errs[i]) == macro.ErrorKey(e) {
				m.errs[i].Count += e.Count
				continue next
			}
		}
		m.errs = append(m.errs, e)
		m.errLevel = append(m.errLevel, name)
	}
}

func (m *Model) addMark(k mark) {
	m.marks = append(m.marks, k)
	// Marks that scrolled out of every chart's window are dropped.
	cut := 0
	for cut < len(m.marks) && m.marks[cut].At < m.samples-history {
		cut++
	}
	m.marks = m.marks[cut:]
	m.chartsDirty = true
}

// markPlateau turns the plateau level's start mark into the plateau's
// mark, so the chart shows where that level ran; when it scrolled away the
// plateau is pinned to now.
func (m *Model) markPlateau(c int) {
	label := fmt.Sprintf("C=%d", c)
	for i := len(m.marks) - 1; i >= 0; i-- {
		if k := &m.marks[i]; k.Kind == markLevel && k.Label == label {
			k.Kind, k.Label = markPlateau, label+" plateau"
			m.chartsDirty = true
			return
		}
	}
	m.addMark(mark{At: m.samples, Label: "plateau " + label, Kind: markPlateau})
}

// clientBound returns the latest client-bound finding, if any.
func (m *Model) clientBound() *phases.ClientBound {
	if len(m.audits) == 0 {
		return nil
	}
	return &m.audits[len(m.audits)-1]
}

// notePath keeps the first thing the path does to the figures: what it
// said before the first level, else the levels that arrived bunched.
func (m *Model) notePath() {
	m.pathWarn = ""
	if m.path == nil {
		return
	}
	if len(m.path.Warnings) > 0 {
		m.pathWarn = m.path.Warnings[0]
	} else {
		m.pathWarn = macro.BunchedSummary(m.path, m.levels)
	}
}

// resetRun clears what belongs to one sweep when a new one starts, its
// timeline too: the charts, their marks (the old plateau's among them)
// and the SLO line start over with the new sweep.
func (m *Model) resetRun() {
	for _, r := range []*ring{&m.tpot50, &m.tpot99, &m.ttft, &m.toks, &m.srvRun, &m.srvQueue,
		&m.gpu.power, &m.gpu.util, &m.gpu.link} {
		r.v = r.v[:0]
	}
	m.samples, m.marks, m.chartsDirty, m.readBack = 0, nil, true, false
	m.slo = nil
	m.levels = nil
	m.plateau = nil
	m.audits = nil
	m.warns, m.warnTop, m.errs, m.errLevel = nil, "", nil, nil
	m.path, m.pathWarn = nil, ""
	m.cur = nil
	m.levelList.Reset()
	m.asked.pause, m.asked.conc = nil, 0
	m.gpu.src, m.gpu.have = nil, false
	m.tableDirty = true
}

// drawSeries pushes a level's journalled seconds onto the charts as its
// ticks would have. The GPU strip, not journalled per second, is not
// drawn for a sweep read back (it would read 0 W).
func (m *Model) drawSeries(d phases.MacroSeries) {
	m.readBack = true
	if m.gpu.src != nil {
		m.gpu.src, m.chartsDirty = nil, true
	}
	for i := range d.Len() {
		m.tpot50.push(d.TPOTp50ms[i])
		m.tpot99.push(d.TPOTp99ms[i])
		m.ttft.push(d.TTFTp50ms[i])
		m.toks.push(d.OutputTokS[i])
		m.srvRun.push(d.Running[i])
		m.srvQueue.push(d.Running[i] + d.Waiting[i])
		for _, r := range []*ring{&m.gpu.power, &m.gpu.util, &m.gpu.link} {
			r.push(0)
		}
		m.samples++
	}
}

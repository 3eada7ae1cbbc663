// Package loadpane is the cockpit's Server/Load pane: one bar per GPU with
// its memory against the expected weights, rate and ETA; the shard bar;
// the load's milestones; the last relevant log lines; a red banner quoting
// the evidence when the load stalls or fails; and keys to start, stop and
// restart the server (with the torch profiler). Its watcher starts with the
// pane and emits into the session like every phase.
package loadpane

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/load/diagnose"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// maxLog is how many relevant log lines the pane keeps for the full view.
const maxLog = 500

// Model is the Server/Load pane.
type Model struct {
	d    *common.Deps
	keys keyMap
	w, h int

	watcher follower // one node's Watcher, or every node's Group
	server  *load.Server
	watchOn bool
	// expanded shows every GPU of every node although one row per node
	// would fit better (the g key); lost are the nodes whose nvidia-smi
	// stopped answering.
	expanded bool
	lost     map[string]bool

	// What the events said.
	hosts      []string
	states     map[string]phases.LoadState
	milestones map[string]float64 // stage → seconds into the load
	logs       []logEntry
	lastServer string
	failure    *phases.LoadFailure
	diag       *phases.Diagnosis            // the latest stall diagnosis, nil before one
	nodeDiag   map[string]*phases.Diagnosis // the latest diagnosis of each node, by name
	diagnosing bool
	version    string
	engine     string // the engine the log shows ("sglang"), "" until known
	gen        int    // the load the milestones belong to

	// Operations and the confirmation they may need.
	op      string // "starting", "stopping", "restarting"; "" when idle
	confirm *confirmation

	fullLog bool
	log     components.List // the full log, following the newest line
	bar     components.Bar

	// The view is drawn once per batch of events, key or resize (dirty),
	// and View returns it; draws counts the drawings.
	view  string
	dirty bool
	draws int
}

type logEntry struct {
	at    time.Time
	line  phases.LogLine
	ranks []int  // every rank that printed this same message
	text  string // the line as drawn, before it is cut and styled
}

// newLogEntry is a log line with its text worked out once, not per frame.
func newLogEntry(at time.Time, l phases.LogLine, ranks []int) logEntry {
	e := logEntry{at: at, line: l, ranks: ranks}
	e.format()
	return e
}

// format sets the drawn text: time, ranks, message.
func (e *logEntry) format() {
	msg := e.line.Msg
	if msg == "" {
		msg = e.line.Text
	}
	e.text = e.at.Format("15:04:05") + " " + rankList(e.ranks) + msg
}

type confirmation struct {
	prompt string
	run    func() tea.Cmd
}

// watchDoneMsg says the watcher ended (the program is quitting, or it
// could not run).
type watchDoneMsg struct{ err error }

// opDoneMsg says a lifecycle operation finished.
type opDoneMsg struct {
	op  string
	err error
}

// New builds the pane.
func New(d *common.Deps) *Model {
	m := &Model{d: d, keys: newKeyMap(d.Keys), states: map[string]phases.LoadState{}, milestones: map[string]float64{}, lost: map[string]bool{},
		log: components.List{FromEnd: true}, bar: components.Bar{Full: d.Styles.BarFull, Empty: d.Styles.BarEmpty}, dirty: true}
	if d.Host == nil || d.Campaign == nil {
		return m
	}
	c := d.Campaign
	m.server = c.NewServer(d.Host)
	if d.Server != nil {
		m.server = d.Server // the campaign run's too, so its starts and stops reach the watcher
	}
	cfg := c.LoadConfig()
	cfg.Host, cfg.Now = d.Host, d.Now
	if len(d.Nodes) > 1 {
		m.watcher = load.NewGroup(cfg, c.LoadNodes(d.Nodes))
		if d.Server == nil {
			m.server = c.NodeServer(d.Nodes)
		}
	} else {
		m.watcher = load.NewWatcher(cfg)
	}
	m.server.Follow(m.watcher) // the campaign run's launches and stops too
	return m
}

func (m *Model) emitter() *phases.Emitter {
	if m.d.Session == nil {
		return nil
	}
	return &phases.Emitter{Out: m.d.Session.Sink(), Now: m.d.Now}
}

// Init starts the watcher, so the GPU bars fill as soon as the cockpit opens.
func (m *Model) Init() tea.Cmd {
	if m.watcher == nil || m.d.Ctx == nil || m.d.Session == nil {
		return nil
	}
	m.watchOn = true
	w, ctx, em := m.watcher, m.d.Ctx, m.emitter()
	return func() tea.Msg { return watchDoneMsg{err: w.Run(ctx, em)} }
}

// Typing is true while a y/n question is open, so that "n" answers it
// instead of opening a note.
func (m *Model) Typing() bool { return m.confirm != nil }

// Busy is true while the server is being started, stopped or restarted.
func (m *Model) Busy() bool { return m.op != "" }

// SetSize records the pane's size.
func (m *Model) SetSize(w, h int) {
	if w != m.w || h != m.h {
		m.w, m.h, m.dirty = w, h, true
	}
}

// Update folds events in and maps keys. What changes the view marks it to
// be drawn again; the clock alone does not (the load's times come with its
// events).
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		m.dirty = m.dirty || len(msg.Events) > 0
	case watchDoneMsg, opDoneMsg, stopCheckMsg, tea.KeyPressMsg:
		m.dirty = true
	}
	return m.update(msg)
}

func (m *Model) update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		for _, e := range msg.Events {
			m.event(e)
		}
	case watchDoneMsg:
		m.watchOn = false
		if msg.err != nil {
			return m, common.Error(msg.err)
		}
	case opDoneMsg:
		m.op = ""
		if msg.err != nil {
			return m, common.Error(msg.err)
		}
		return m, common.Status("server " + msg.op + " done")
	case stopCheckMsg:
		return m, m.stopChecked(msg)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) event(e phases.Event) {
	switch v := e.Data.(type) {
	case phases.LoadState:
		if _, ok := m.states[v.Host]; !ok {
			m.hosts = append(m.hosts, v.Host)
			m.orderHosts()
		}
		m.states[v.Host] = v
		if v.Failure != nil || v.Host == m.host() {
			m.failure = v.Failure
		}
		if v.VLLM != "" {
			m.version = v.VLLM
		}
		if v.Engine != "" && v.Host == m.host() {
			m.engine = v.Engine
		}
		m.newLoad(v.Load)
	case phases.Milestone:
		m.newLoad(v.Load)
		if v.Load < m.gen {
			return // from a load that was replaced
		}
		m.milestones[v.Stage] = v.AtS
		if v.Stage == "vllm_version" {
			m.version = v.Value
		}
	case phases.LoadFailure:
		f := v
		m.failure = &f
	case phases.Diagnosis:
		m.diagnosis(e.Time, v)
	case phases.Stall:
		s := v
		for h, st := range m.states {
			if v.Node == "" || v.Node == h {
				st.Stall = &s
				m.states[h] = st
			}
		}
	case phases.LogLine:
		m.addLog(e.Time, v)
		if len(m.logs) > maxLog {
			m.logs = m.logs[len(m.logs)-maxLog:]
		}
	case phases.ServerEvent:
		m.serverEvent(e.Time, v)
	}
}

// diagnosis keeps a load's diagnosis (per node too) and writes it into the
// log view: verdict, why, processes, hints.
func (m *Model) diagnosis(at time.Time, v phases.Diagnosis) {
	dg := v
	m.diag, m.diagnosing = &dg, false
	if v.Node != "" {
		if m.nodeDiag == nil {
			m.nodeDiag = map[string]*phases.Diagnosis{}
		}
		m.nodeDiag[v.Node] = &dg
	}
	lines := []string{"diagnosis: " + v.Verdict}
	if v.Node != "" {
		lines[0] = "diagnosis on " + v.Node + ": " + v.Verdict
	}
	for _, w := range v.Why {
		lines = append(lines, "  · "+w)
	}
	for _, p := range v.Procs {
		lines = append(lines, "  "+diagnose.ProcText(p))
	}
	for _, h := range v.Hints {
		lines = append(lines, "  hint: "+h)
	}
	for _, l := range lines {
		m.logs = append(m.logs, newLogEntry(at, phases.LogLine{Rank: -1, Level: "WHY", Msg: l, Text: l}, nil))
	}
}

// serverEvent keeps the server's last step (and the nodes lost) and writes
// it into the log view.
func (m *Model) serverEvent(at time.Time, v phases.ServerEvent) {
	switch v.Action {
	case "node_lost":
		m.lost[v.Node] = true
	case "node_back":
		delete(m.lost, v.Node)
	}
	m.lastServer = v.Action
	if v.Node != "" && v.Action != "node_lost" && v.Action != "node_back" {
		m.lastServer = v.Node + " " + v.Action
	}
	if v.Detail != "" {
		m.lastServer += ": " + v.Detail
	}
	m.logs = append(m.logs, newLogEntry(at, phases.LogLine{Rank: -1, Level: "SERVER", Msg: m.lastServer, Text: m.lastServer}, nil))
}

// addLog appends a log line, folding the same message from another rank
// (eight workers print every milestone) into the line before.
func (m *Model) addLog(at time.Time, l phases.LogLine) {
	if n := len(m.logs); n > 0 && l.Rank >= 0 {
		last := &m.logs[n-1]
		if last.line.Msg == l.Msg && l.Msg != "" && at.Sub(last.at) < 10*time.Second && last.line.Rank >= 0 {
			last.ranks = append(last.ranks, l.Rank)
			last.format()
			return
		}
	}
	var ranks []int
	if l.Rank >= 0 {
		ranks = []int{l.Rank}
	}
	m.logs = append(m.logs, newLogEntry(at, l, ranks))
}

// newLoad starts the milestones over when a new load began.
func (m *Model) newLoad(gen int) {
	if gen > m.gen {
		m.gen = gen
		m.milestones = map[string]float64{}
		m.diag, m.nodeDiag = nil, nil
	}
}

// serving is true when some host's /health answered 200.
func (m *Model) serving() bool {
	for _, st := range m.states {
		if st.Ready {
			return true
		}
	}
	return false
}

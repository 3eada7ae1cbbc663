package ui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// MinWidth and MinHeight are the smallest screen the cockpit draws on.
const (
	MinWidth  = 80
	MinHeight = 24
)

// Saver writes the notebook (report.Autosave satisfies it).
type Saver interface {
	Kick()
	WriteNow() (string, time.Time, error)
}

// Model is the cockpit's root: it routes messages to the panes and lays
// them out between a header and a status bar.
type Model struct {
	d      *common.Deps
	table  []PaneEntry // the panes' entries, in tab order
	panes  []common.Component
	active int
	w, h   int

	help     help.Model
	showHelp bool

	status    string
	statusErr bool
	statusSeq int
	// notice is said in the status bar as the cockpit opens, laid out on
	// one row (components.Fields); statusFields is it while it shows.
	notice       []components.Field
	statusFields []components.Field

	start   time.Time
	now     time.Time
	conn    phases.ConnState
	hasConn bool
	// server is the server's state as its lifecycle events say: loading,
	// ready, stopped, failed ("" before any).
	server  string
	running phases.Brackets // the phases running

	campaignStep string // the campaign run's step under way ("" when none)

	noting      bool
	note        textinput.Model
	confirmQuit bool
	quitting    bool

	saver   Saver
	updates <-chan phases.Event
	// lastSave is the notebook's last write, for the status bar.
	lastSave     time.Time
	lastSavePath string
}

// New builds the root with the panes of the table.
func New(d *common.Deps, saver Saver) *Model {
	return NewWith(d, saver, Panes)
}

// NewWith builds the root with the panes of table.
func NewWith(d *common.Deps, saver Saver, table []PaneEntry) *Model {
	panes := make([]common.Component, len(table))
	for i, e := range table {
		panes[i] = e.New(d)
	}
	d.Keys.Pane = paneKey(table)
	ti := textinput.New()
	ti.Placeholder = "what did you see? (enter saves, esc cancels)"
	ti.Prompt = "note> "
	ti.CharLimit = 500
	h := help.New()
	now := d.Now()
	m := &Model{
		d: d, table: table, panes: panes, help: h, note: ti, saver: saver,
		start: now, now: now,
	}
	if d.Session != nil {
		m.updates = d.Session.Updates()
		replay(table, panes, d.Session.Events(), now)
	}
	return m
}

// noticeHold is how long the opening notice stays in the status bar
// (a key's own status replaces it sooner).
const noticeHold = 20 * time.Second

// Notice sets what the status bar says as the cockpit opens, for
// noticeHold: figures laid out on the status row alone at any width (with
// their short labels, or fewer, when the row is narrow), so the key help
// stays under it. Its whole text belongs where it stays, on stderr.
func (m *Model) Notice(fields []components.Field) { m.notice = fields }

// Init starts every pane, the event stream and the clock, and says the
// opening notice.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.tick(), waitEvents(m.updates)}
	if len(m.notice) > 0 {
		texts := make([]string, len(m.notice))
		for i, f := range m.notice {
			texts[i] = f.Text
		}
		cmds = append(cmds, m.statusFor(strings.Join(texts, " "), false, noticeHold))
		m.statusFields = m.notice
	}
	for _, p := range m.panes {
		cmds = append(cmds, p.Init())
	}
	return tea.Batch(cmds...)
}

type tickMsg time.Time

type clearStatusMsg struct{ seq int }

type savedMsg struct {
	path string
	at   time.Time
	err  error
}

type noteSavedMsg struct {
	text string
	err  error
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update routes: window size to every pane, keys to the focused pane after
// the global keys, data to the pane that owns it.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		return m, tea.Batch(m.tick(), m.broadcast(common.TickMsg{At: m.now}))
	case batchMsg:
		return m, tea.Batch(m.route(msg), waitEvents(m.updates))
	case common.StatusMsg:
		return m, m.setStatus(msg.Text, msg.Error)
	case clearStatusMsg:
		if msg.seq == m.statusSeq {
			m.status, m.statusFields = "", nil
		}
		return m, nil
	case savedMsg:
		// When it was written reaches the status bar as an event, as it
		// does for every write; this only says so.
		if msg.err != nil {
			return m, m.setStatus("notebook not written: "+msg.err.Error(), true)
		}
		return m, m.setStatus("notebook written to "+msg.path+" at "+msg.at.Format("15:04:05"), false)
	case noteSavedMsg:
		if msg.err != nil {
			m.note.SetValue(msg.text)
			m.noting = true
			return m, tea.Batch(m.note.Focus(), m.setStatus("note NOT saved: "+msg.err.Error(), true))
		}
		if m.saver != nil {
			m.saver.Kick()
		}
		return m, m.setStatus("note saved to the journal", false)
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	// Anything else (pane-internal messages from commands) goes to every
	// pane; each ignores what is not its own.
	return m, m.broadcast(msg)
}

func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	for i, p := range m.panes {
		np, cmd := p.Update(msg)
		m.panes[i] = np
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

// route hands each pane the events its table entry asks for. Phase
// boundaries, the connection and the notebook's writes also update the root.
func (m *Model) route(b batchMsg) tea.Cmd {
	per := make([][]phases.Event, len(m.panes))
	kick := false
	for _, ev := range b.events {
		m.observe(ev)
		for i, e := range m.table {
			if e.wants(ev) {
				per[i] = append(per[i], ev)
			}
		}
		if !phases.Ephemeral(ev.Kind) && ev.Kind != phases.KindSessionConn {
			kick = true
		}
	}
	if kick && m.saver != nil {
		m.saver.Kick()
	}
	var cmds []tea.Cmd
	for i, evs := range per {
		if len(evs) == 0 {
			continue
		}
		np, cmd := m.panes[i].Update(common.EventsMsg{At: b.at, Events: evs})
		m.panes[i] = np
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

// observe keeps what the root shows itself: the link, the running phases and
// the notebook's last write.
func (m *Model) observe(ev phases.Event) {
	m.running.See(ev)
	switch d := ev.Data.(type) {
	case phases.ConnState:
		m.conn, m.hasConn = d, true
	case phases.ServerEvent, phases.Milestone, phases.LoadFailure:
		m.server = serverState(m.server, d)
	case phases.RunStep:
		m.campaignStep = ""
		if d.State == phases.StepStarted {
			m.campaignStep = d.Name
		}
	case phases.RunFinished:
		m.campaignStep = ""
	case phases.NotebookSaved:
		if !d.Failed {
			m.lastSave, m.lastSavePath = ev.Time, d.Path
		}
	}
}

func (m *Model) setStatus(text string, isErr bool) tea.Cmd {
	wait := 4 * time.Second
	if isErr {
		wait = 10 * time.Second
	}
	return m.statusFor(text, isErr, wait)
}

// statusFor shows text in the status bar for wait, or until the next.
func (m *Model) statusFor(text string, isErr bool, wait time.Duration) tea.Cmd {
	m.statusSeq++
	m.status, m.statusErr, m.statusFields = text, isErr, nil
	seq := m.statusSeq
	return tea.Tick(wait, func(time.Time) tea.Msg { return clearStatusMsg{seq: seq} })
}

func (m *Model) busy() bool {
	for _, p := range m.panes {
		if p.Busy() {
			return true
		}
	}
	return false
}

func (m *Model) focused() common.Component { return m.panes[m.active] }

// keyMap is the help line's view of the focused pane's keys, then the root's.
type keyMap struct {
	global []key.Binding
	pane   common.Component
}

func (k keyMap) ShortHelp() []key.Binding {
	return append(append([]key.Binding{}, k.pane.ShortHelp()...), k.global...)
}

// FullHelp is the pane's columns; the root's keys are a block of their own
// below them (globalColumns), so that a pane with many keys never pushes
// them off an 80-column screen.
func (k keyMap) FullHelp() [][]key.Binding { return k.pane.FullHelp() }

// The keys of the note input, for the help line.
var (
	noteSave   = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "save note"))
	noteCancel = key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "discard"))
)

// helpKeys are the keys the help line shows: only those that work now.
// While a question or a text input is open, the global keys go to it and
// are not offered.
func (m *Model) helpKeys() []key.Binding {
	k := m.d.Keys
	switch {
	case m.confirmQuit:
		return []key.Binding{k.Confirm, k.ForceQuit}
	case m.noting:
		return []key.Binding{noteSave, noteCancel, k.ForceQuit}
	case m.focused().Typing():
		return append(append([]key.Binding{}, m.focused().ShortHelp()...), k.ForceQuit)
	}
	return keyMap{global: m.globalKeys(), pane: m.focused()}.ShortHelp()
}

// globalKeys are the root's keys for the help line.
func (m *Model) globalKeys() []key.Binding {
	k := m.d.Keys
	return []key.Binding{k.Pane, k.NextPane, k.Write, k.Note, k.Help, k.Quit, k.ForceQuit, k.Suspend}
}

// globalColumns are the root's keys for the full help, shift+tab included.
func (m *Model) globalColumns() [][]key.Binding {
	k := m.d.Keys
	return [][]key.Binding{
		{k.Pane, k.NextPane, k.PrevPane},
		{k.Write, k.Note, k.Help},
		{k.Quit, k.ForceQuit, k.Suspend},
	}
}

func (m *Model) saveNow() tea.Cmd {
	if m.saver == nil {
		return common.Error(errNoNotebook)
	}
	s := m.saver
	return func() tea.Msg {
		p, at, err := s.WriteNow()
		return savedMsg{path: p, at: at, err: err}
	}
}

func (m *Model) recordNote(text string) tea.Cmd {
	s := m.d.Session
	pane := m.table[m.active].Title
	now := m.d.Now()
	return func() tea.Msg {
		if s == nil {
			return noteSavedMsg{text: text, err: errNoNotebook}
		}
		err := s.Record(phases.New(now, phases.KindNotesNote, phases.Note{Text: text, Pane: pane}))
		return noteSavedMsg{text: text, err: err}
	}
}

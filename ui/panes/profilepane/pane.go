// Package profilepane is the cockpit's Profile pane: it captures a torch
// profile of the running server (s starts, c cancels), shows each step with
// its elapsed time while the capture runs, then where the GPU time went: the
// split by category (GEMM, attention, MoE, communication, other), the
// communication share of GPU time and per decode step, and the top kernels.
package profilepane

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// Model is the Profile pane.
type Model struct {
	d    *common.Deps
	keys keyMap
	w, h int

	r common.RunControl // the capture
	// What the other phases said that a capture needs: the sweep's plateau
	// and mean TPOT per concurrency, and the last load's time to ready.
	sweep struct {
		plateau *campaignrun.PlateauTracker // the latest sweep's for the campaign's model, TP and launch
		tpot    map[int]float64
	}
	readyS  float64
	steps   []stepView              // the capture's steps, in order
	sum     *phases.ProfileSummary  // the level shown
	liveSum bool                    // the latest summary came from a capture of this session's
	levels  []phases.ProfileSummary // one per capture window, in order
	failed  *phases.ProfileFailed
	msg     string          // a line for the operator (why nothing started, what to do)
	frame   int             // spinner frame, advanced by the root's clock
	kernels components.List // the kernel table
	tpot    float64         // the sweep's mean TPOT at the shown level's C (ms), the one the budget splits

	// The view is drawn once per change (a batch of events, a key that
	// moves something, a message of the capture, a resize, and each tick
	// while a step runs: its spinner and elapsed time run on the clock)
	// and View returns it. draws counts the drawings.
	view  string
	dirty bool
	draws int
}

// stepView is one capture step as shown.
type stepView struct {
	name     string
	detail   string
	started  float64 // seconds since the epoch, when the step began
	elapsedS float64
	done     bool
}

// New builds the pane.
func New(d *common.Deps) *Model {
	m := &Model{d: d, keys: newKeyMap(d.Keys), r: common.NewRunControl(phases.Profile), dirty: true}
	m.sweep.tpot = map[int]float64{}
	var id phases.RunIdentity
	if d.Campaign != nil {
		id = d.Campaign.RunIdentity()
	}
	m.sweep.plateau = campaignrun.NewPlateauTracker(id)
	return m
}

// Init starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Typing is false: this pane has no text input.
func (m *Model) Typing() bool { return false }

// Busy is true while a capture runs.
func (m *Model) Busy() bool { return m.r.Active() }

// SetSize records the pane's size.
func (m *Model) SetSize(w, h int) {
	if w != m.w || h != m.h {
		m.w, m.h, m.dirty = w, h, true
	}
	m.kernels.SetSize(m.kernelCount(), m.kernelRows())
}

// Update handles keys, the phase's events, the clock and the capture's end;
// what changes the view marks it to be drawn again.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		var cmd tea.Cmd
		if len(msg.Events) > 0 {
			m.dirty = true
		}
		for _, e := range msg.Events {
			m.apply(e)
			if _, ok := e.Data.(phases.ProfileSummary); ok {
				m.liveSum = !msg.Replayed // a capture of this session's, or one read from the journal
			}
			if !msg.Replayed && m.r.Event(e) {
				cmd = m.ended()
			}
		}
		return m, cmd
	case common.TickMsg:
		m.frame++
		m.dirty = m.dirty || m.live()
	default:
		if cmd, ended, mine := m.r.Update(msg); mine {
			m.dirty = true
			if ended {
				return m, m.ended()
			}
			return m, cmd
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Start):
		return m.start()
	case key.Matches(msg, m.keys.Cancel):
		return m.stop()
	case key.Matches(msg, m.keys.Level):
		return m.nextLevel()
	default:
		offset := m.kernels.Offset
		m.kernels.SetSize(m.kernelCount(), m.kernelRows())
		m.kernels.Key(m.d.Keys, msg)
		if m.kernels.Offset != offset {
			m.dirty = true
		}
	}
	return nil
}

// live is true while a step of the capture runs: its spinner and elapsed
// time move with the clock.
func (m *Model) live() bool {
	n := len(m.steps)
	return m.Busy() && n > 0 && !m.steps[n-1].done
}

// apply folds one event of the phase into the view.
func (m *Model) apply(e phases.Event) {
	m.sweep.plateau.See(e)
	switch v := e.Data.(type) {
	case phases.ProfileStep:
		started := float64(e.Time.UnixNano())/1e9 - v.ElapsedS
		if n := len(m.steps); n > 0 && m.steps[n-1].name == v.Step && !m.steps[n-1].done {
			st := &m.steps[n-1]
			st.elapsedS, st.done = v.ElapsedS, v.Done
			if v.Detail != "" {
				st.detail = v.Detail
			}
			return
		}
		m.steps = append(m.steps, stepView{name: v.Step, detail: v.Detail, started: started, elapsedS: v.ElapsedS, done: v.Done})
	case phases.ProfileSummary:
		if v.Level > 0 {
			for i := range m.levels {
				if m.levels[i].Level == v.Level && m.levels[i].Window == v.Window {
					m.levels = append(m.levels[:i], m.levels[i+1:]...)
					break
				}
			}
			m.levels = append(m.levels, v)
		} else {
			m.levels = nil
		}
		if v.Window == phases.WindowSteady && m.sum != nil && m.sum.Level == v.Level {
			return // keep the level's decode-only window on screen; l reaches this one
		}
		s := v
		m.show(&s)
	case phases.ProfileFailed:
		f := v
		m.failed = &f
	case phases.LevelResult:
		if v.Rate == 0 && v.MeanTPOTms > 0 {
			m.sweep.tpot[v.Concurrency] = v.MeanTPOTms
		}
	case phases.Milestone:
		if v.Stage == phases.StageReady && v.AtS > 0 {
			m.readyS = v.AtS
		}
	}
}

// ShortHelp lists the pane's keys for the footer.
func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Start, m.keys.Cancel, m.keys.Level, m.keys.Down}
}

// FullHelp lists the pane's keys in columns.
func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.keys.Start, m.keys.Cancel, m.keys.Level}, {m.keys.Up, m.keys.Down, m.keys.PageUp, m.keys.PageDown, m.keys.Top, m.keys.Bottom}}
}

// keyMap is the pane's own bindings; scrolling uses the shared ones.
type keyMap struct {
	Start, Cancel, Level  key.Binding
	Up, Down, Top, Bottom key.Binding
	PageUp, PageDown      key.Binding
}

func newKeyMap(k *common.KeyMap) keyMap {
	km := keyMap{
		Start:  key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "capture a profile")),
		Cancel: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel capture")),
		Level:  key.NewBinding(key.WithKeys("l", "right"), key.WithHelp("l/→", "next level")),
	}
	if k != nil {
		km.Up, km.Down, km.Top, km.Bottom = k.Up, k.Down, k.Top, k.Bottom
		km.PageUp, km.PageDown = k.PageUp, k.PageDown
		km.Up.SetHelp("k/↑", "scroll kernels")
		km.Down.SetHelp("j/↓", "scroll kernels")
	}
	return km
}

// kernelCount is how many kernels the summary lists.
func (m *Model) kernelCount() int {
	if m.sum == nil {
		return 0
	}
	return len(m.sum.Top)
}

// show makes s the summary on screen, with the TPOT of its level.
func (m *Model) show(s *phases.ProfileSummary) {
	m.sum, m.failed = s, nil
	m.tpot = m.tpotAt(max(s.Level, 1))
	m.kernels.Reset()
	m.dirty = true
}

// nextLevel is the l key: show the next level's window.
func (m *Model) nextLevel() tea.Cmd {
	if len(m.levels) < 2 || m.sum == nil {
		return common.Status("one level captured: nothing to switch to")
	}
	i := 0
	for j := range m.levels {
		if m.levels[j].Level == m.sum.Level && m.levels[j].Window == m.sum.Window {
			i = (j + 1) % len(m.levels)
		}
	}
	s := m.levels[i]
	m.show(&s)
	return common.Status(fmt.Sprintf("showing the C=%d window", s.Level))
}

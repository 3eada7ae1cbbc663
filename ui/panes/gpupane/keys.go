package gpupane

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// Keys are the keys both panes have.
type Keys struct {
	Start, Cancel, StopServer, Force key.Binding
}

// NewKeys builds the shared keys.
func NewKeys() Keys {
	return Keys{
		Start:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "start")),
		Cancel:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel")),
		StopServer: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop server, then run")),
		Force:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "run on busy GPUs")),
	}
}

// Key handles the shared keys: s starts, c cancels, and after a busy start
// f runs anyway and x stops the server first. handled is false for any
// other key.
func (r *Runner) Key(msg tea.KeyPressMsg, k Keys, start func(force bool) tea.Cmd) (cmd tea.Cmd, handled bool) {
	switch {
	case key.Matches(msg, k.Start):
		return start(false), true
	case key.Matches(msg, k.Cancel):
		return r.Stop(), true
	case key.Matches(msg, k.Force) && r.State == common.RunBusy:
		return start(true), true
	case key.Matches(msg, k.StopServer) && r.State == common.RunBusy:
		return r.StopServer(), true
	}
	return nil, false
}

// BusyHelp is the short help after a busy start (ok is false otherwise):
// there s checks the GPUs again, as the pane's own line says.
func (r *Runner) BusyHelp(k Keys) (help []key.Binding, ok bool) {
	if r.State == common.RunBusy && !r.Active() {
		again := k.Start
		again.SetHelp("s", "check again")
		return []key.Binding{k.StopServer, k.Force, again}, true
	}
	return nil, false
}

// Column is the shared keys' column of the full help.
func (k Keys) Column() []key.Binding {
	return []key.Binding{k.Start, k.Cancel, k.StopServer, k.Force}
}

// Route is a GPU pane's Update: the phase's events go to add, then (live
// ones) to the run; keys go to the shared keys, then to key; the run takes its own
// messages. changed is true when what the pane shows may have changed: a
// batch of events (the root sends a pane only its phase's, with the brackets
// that end a run), a shared key, or a message of the run (its end, the
// server stop). A key that goes to key is the pane's to judge.
func (r *Runner) Route(msg tea.Msg, k Keys, start func(force bool) tea.Cmd,
	add func([]phases.Event), key func(tea.KeyPressMsg) tea.Cmd) (cmd tea.Cmd, changed bool) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		var mine []phases.Event
		for _, e := range msg.Events {
			if e.Phase == r.Phase {
				mine = append(mine, e)
			}
		}
		add(mine)
		if msg.Replayed {
			// A journal's events run nothing now: a run it left
			// unfinished is not one under way elsewhere.
			return nil, len(msg.Events) > 0
		}
		return r.Events(msg.Events), len(msg.Events) > 0
	case tea.KeyPressMsg:
		if cmd, ok := r.Key(msg, k, start); ok {
			return cmd, true
		}
		return key(msg), false
	}
	return r.Update(msg, start)
}

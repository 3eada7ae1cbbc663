// Package common holds what every cockpit pane shares: the Component
// contract, the dependencies a pane is given, the key map, the styles built
// once from a theme of ANSI colours, and the messages the root routes.
package common

import (
	"context"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/report"
)

// Component is one pane: it updates on messages, renders into the size it was
// given, and lists its own keys for the help.
type Component interface {
	help.KeyMap
	Init() tea.Cmd
	Update(msg tea.Msg) (Component, tea.Cmd)
	View() string
	SetSize(width, height int)
	// Typing is true while a text input has focus: global letter keys
	// (q, digits, w, n) then go to the pane.
	Typing() bool
	// Busy is true while the pane's phase is running (quit asks first).
	Busy() bool
}

// Deps is what a pane is given to do its work.
type Deps struct {
	Ctx  context.Context // ends when the program quits
	Host remote.Host
	// Nodes are every node of a deployment on several hosts, Host (the
	// head) first; empty for one host.
	Nodes    []remote.Host
	Campaign *campaign.Campaign
	Session  *report.Session
	Styles   *Styles
	Keys     *KeyMap
	Now      func() time.Time
	// APIKey is the server's API key (never journalled).
	APIKey string
	// AutoStart names the phases whose pane starts its run at once (the
	// demo starts the sweep so its charts move within seconds).
	AutoStart map[string]bool
	// Server is the serving process's lifecycle, shared by the Load pane
	// and the campaign run (nil: the Load pane makes its own).
	Server *load.Server
	// RunCampaign runs the campaign's remaining steps (nil when it cannot
	// run here); RunIdentity is what its steps are done for.
	RunCampaign func(ctx context.Context) (*campaignrun.Result, error)
	RunIdentity phases.RunIdentity
}

// Simulated reports whether the pane's host is the simulated deployment.
func (d *Deps) Simulated() bool { return d.Host != nil && remote.IsSimulated(d.Host) }

// EventsMsg is one batch of session events for a pane, delivered about
// every 250 ms. The root sends each pane the events of its own phase (the
// Notes pane gets every journalled event).
type EventsMsg struct {
	At     time.Time
	Events []phases.Event
	// Replayed: the events were in the journal before the cockpit started
	// (a resumed campaign's), not live.
	Replayed bool
}

// TickMsg is the root's once-a-second clock, sent to every pane.
type TickMsg struct{ At time.Time }

// StatusMsg asks the root to show a transient message in the footer.
type StatusMsg struct {
	Text  string
	Error bool
}

// Status returns a command that shows text in the footer.
func Status(text string) tea.Cmd {
	return func() tea.Msg { return StatusMsg{Text: text} }
}

// Error returns a command that shows err in the footer as an error.
func Error(err error) tea.Cmd {
	return func() tea.Msg { return StatusMsg{Text: err.Error(), Error: true} }
}

// ChromeRows are the screen rows the root takes around the pane: header,
// tabs, status bar and help line.
const ChromeRows = 4

// PhaseOf is the phase whose pane an event is for: the phase it belongs
// to, except that a run's start and finish go to the phase that ran and a
// marker to the phase it was dropped on.
func PhaseOf(ev phases.Event) string {
	switch d := ev.Data.(type) {
	case phases.PhaseStarted:
		return d.Name
	case phases.PhaseFinished:
		return d.Name
	case phases.Marker:
		if d.Pane != "" {
			return d.Pane
		}
	}
	return ev.Phase
}

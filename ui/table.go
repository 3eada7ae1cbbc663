package ui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/loadpane"
	"github.com/profdeck/profdeck/ui/panes/macropane"
	"github.com/profdeck/profdeck/ui/panes/micropane"
	"github.com/profdeck/profdeck/ui/panes/ncclpane"
	"github.com/profdeck/profdeck/ui/panes/notespane"
	"github.com/profdeck/profdeck/ui/panes/profilepane"
)

// PaneEntry is one pane of the cockpit. The table of them is the one place
// a pane is declared: it drives the routing of events, the tab bar, the
// digit keys and the help. Adding a pane is adding an entry.
type PaneEntry struct {
	Phase string // the phase whose events the pane gets
	Key   string // the key that shows it
	Title string // its name in the tab bar, the help, the status bar and notes
	New   func(*common.Deps) common.Component
	// Also are other phases whose journalled events the pane gets too.
	Also []string
	// Journal: the pane gets every journalled event as well (the Notes pane).
	Journal bool
	// Replay: at start, the pane gets the events of its choice that the
	// journal already holds (a resumed campaign's), as one batch.
	Replay bool
}

// Panes is the cockpit's table, in tab order.
var Panes = []PaneEntry{
	{Phase: phases.Load, Key: "1", Title: "Server/Load", New: pane(loadpane.New)},
	// Macro, Micro and NCCL reopen with the journal's last results.
	{Phase: phases.Macro, Key: "2", Title: "Macro", New: pane(macropane.New), Replay: true,
		Also: []string{phases.Session}}, // the campaign's run, which starts the sweep
	{Phase: phases.Micro, Key: "3", Title: "Micro", New: pane(micropane.New), Replay: true},
	{Phase: phases.NCCL, Key: "4", Title: "NCCL", New: pane(ncclpane.New), Replay: true},
	// The Profile pane levels its windows at the sweep's plateau (of the
	// latest sweep for the campaign's model, TP and launch: it follows the
	// runs), compares them with the sweep's TPOT and says what a reload costs.
	{Phase: phases.Profile, Key: "5", Title: "Profile", New: pane(profilepane.New),
		Also: []string{phases.Macro, phases.Load, phases.Session}, Replay: true},
	{Phase: phases.Notes, Key: "6", Title: "Notes", New: pane(notespane.New), Journal: true, Replay: true},
}

// pane turns a pane's constructor into the table's.
func pane[T common.Component](newPane func(*common.Deps) T) func(*common.Deps) common.Component {
	return func(d *common.Deps) common.Component { return newPane(d) }
}

// wants reports whether the pane gets ev.
func (e PaneEntry) wants(ev phases.Event) bool {
	ph := common.PhaseOf(ev)
	if ph == e.Phase || e.Journal && !phases.Ephemeral(ev.Kind) {
		return true
	}
	for _, a := range e.Also {
		if ph == a && !phases.Ephemeral(ev.Kind) {
			return true
		}
	}
	return false
}

// paneKey is the binding of the table's keys, for the root and its help.
func paneKey(table []PaneEntry) key.Binding {
	keys := make([]string, len(table))
	for i, e := range table {
		keys[i] = e.Key
	}
	help := strings.Join(keys, "/")
	if len(keys) > 2 {
		help = keys[0] + "-" + keys[len(keys)-1]
	}
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, "go to pane"))
}

// paneFor is the index of the pane whose key msg is, or -1.
func paneFor(table []PaneEntry, k string) int {
	for i, e := range table {
		if e.Key == k {
			return i
		}
	}
	return -1
}

// replay hands the panes whose entry asks for it the events the journal
// holds already, each pane those its entry wants.
func replay(table []PaneEntry, panes []common.Component, prior []phases.Event, at time.Time) {
	for i, e := range table {
		if !e.Replay {
			continue
		}
		var evs []phases.Event
		for _, ev := range prior {
			if e.wants(ev) {
				evs = append(evs, ev)
			}
		}
		if len(evs) > 0 {
			panes[i], _ = panes[i].Update(common.EventsMsg{At: at, Events: evs, Replayed: true})
		}
	}
}

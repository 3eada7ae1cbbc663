package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
)

// batchWindow is how long events are gathered into one message.
const batchWindow = 250 * time.Millisecond

// maxBatch bounds one batch, so a burst cannot make one huge update.
const maxBatch = 4096

type batchMsg struct {
	at     time.Time
	events []phases.Event
}

// waitEvents waits for the first event, gathers what else arrives within
// batchWindow, and returns it all as one message. Update re-arms it. An idle
// session costs no redraws.
func waitEvents(ch <-chan phases.Event) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		first, ok := <-ch
		if !ok {
			return nil
		}
		evs := []phases.Event{first}
		timer := time.NewTimer(batchWindow)
		defer timer.Stop()
		for len(evs) < maxBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					return batchMsg{at: time.Now(), events: evs}
				}
				evs = append(evs, ev)
			case <-timer.C:
				return batchMsg{at: time.Now(), events: evs}
			}
		}
		return batchMsg{at: time.Now(), events: evs}
	}
}

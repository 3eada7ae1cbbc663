package macropane

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
)

// noteJournal follows a sweep's brackets through the journal's events: one
// that started and never finished there (the process that ran it died) is
// cut short, not running. A live start, here or elsewhere, is a new sweep.
func (m *Model) noteJournal(msg common.EventsMsg) {
	open := m.cutOff
	for _, ev := range msg.Events {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			if d.Name == phases.Macro {
				open = msg.Replayed
			}
		case phases.PhaseFinished:
			if d.Name == phases.Macro {
				open = false
			}
		}
	}
	m.cutOff = open
}

// cutShort is true while the pane shows a sweep that the journal left
// unfinished and nothing runs now.
func (m *Model) cutShort() bool { return m.cutOff && m.r.State == common.RunIdle }

// cutOffLine is the progress line of a sweep the journal left unfinished:
// where it stopped and how many levels it finished.
func (m *Model) cutOffLine() string {
	where := fmt.Sprintf("after %d levels", len(m.levels))
	if c := m.cur; c != nil {
		where = fmt.Sprintf("in level %d/%d (C=%d)", c.Index, max(c.Index, m.levelCount()), c.Started.Concurrency)
		if c.Started.Concurrency == 0 && c.Started.Rate > 0 {
			where = fmt.Sprintf("in level %d/%d (%g/s)", c.Index, max(c.Index, m.levelCount()), c.Started.Rate)
		}
	}
	return fmt.Sprintf("cut short %s: no end in the journal · %d levels done", where, len(m.levels))
}

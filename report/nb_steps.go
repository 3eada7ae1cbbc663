package report

import (
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// stepRow is one step of a campaign run, as the notebook lists it.
type stepRow struct {
	run           int
	name, state   string
	start, finish time.Time
	reason        string
}

// campaignSteps collects the campaign runs' steps in journal order: one row
// per step a run started or skipped. A step started and never ended was cut
// short by a crash.
func campaignSteps(events []phases.Event) []stepRow {
	var rows []stepRow
	open := map[string]int{} // step → its row in the current run
	run := 0
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			run++
			clear(open)
		case phases.RunStep:
			if i, ok := open[d.Name]; ok && d.State != phases.StepStarted {
				rows[i].state, rows[i].finish, rows[i].reason = d.State, ev.Time, d.Reason
				delete(open, d.Name)
				continue
			}
			rows = append(rows, stepRow{run: run, name: d.Name, state: d.State, start: ev.Time, reason: d.Reason})
			if d.State == phases.StepStarted {
				open[d.Name] = len(rows) - 1
			} else {
				rows[len(rows)-1].finish = ev.Time
			}
		}
	}
	return rows
}

// campaignStepsTable writes the "Campaign steps" section: step, state,
// start, duration and reason of every step the campaign runs went through.
func (n *nb) campaignStepsTable(events []phases.Event) {
	rows := campaignSteps(events)
	if len(rows) == 0 {
		return
	}
	n.ln("## Campaign steps\n")
	n.ln("| Run | Step | State | Start | Duration | Reason |")
	n.ln("|---:|---|---|---|---:|---|")
	for _, r := range rows {
		state, dur := r.state, "—"
		switch {
		case state == phases.StepStarted && r.name == "notebook":
			state = "writing (this file)"
		case state == phases.StepStarted:
			state = "no end yet (running, or cut short)"
		}
		if !r.finish.IsZero() {
			dur = units.Span(r.finish.Sub(r.start))
		}
		n.p("| %d | %s | %s | %s | %s | %s |\n", r.run, r.name, state, n.clock(r.start), dur, mdCell(r.reason))
	}
	n.ln("")
	n.ln(loadsLine(rows) + "\n")
}

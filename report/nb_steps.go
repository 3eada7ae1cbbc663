package report

import (
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// stepRow is one step of a campaign run, as the notebook lists it; a
// variant's steps (its load a serve) name the variant.
type stepRow struct {
	run           int
	name, state   string
	start, finish time.Time
	reason        string
	variant       string
}

// label is the row's step: a variant's behind its name ("cap64: serve").
func (r stepRow) label() string {
	if r.variant != "" {
		return r.variant + ": " + r.name
	}
	return r.name
}

// stepRows collects the rows in journal order.
type stepRows struct {
	rows    []stepRow
	open    map[string]int // variant/step → its row in the current run
	run     int
	variant string
	load    int // the serving variant's load row while it loads, else -1
}

// campaignSteps collects the campaign runs' steps in journal order: one row
// per step a run started or skipped, and each variant's load (from its
// start to its first step, or to its end when it ran none) and steps. A
// step started and never ended was cut short by a crash.
func campaignSteps(events []phases.Event) []stepRow {
	c := &stepRows{open: map[string]int{}, load: -1}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			c.run++
			clear(c.open)
		case phases.VariantStarted:
			c.variant = d.Spec.Name
			reason := "launch: " + d.Launch
			if d.SharesLoadOf != "" {
				reason = "already serving: the same launch and environment as " + d.SharesLoadOf
			}
			c.rows = append(c.rows, stepRow{run: c.run, name: "serve", state: phases.StepStarted, start: ev.Time, reason: reason, variant: c.variant})
			c.load = len(c.rows) - 1
		case phases.VariantFinished:
			c.endLoad(ev.Time, d.State, d.Evidence)
			c.variant = ""
		case phases.RunStep:
			c.endLoad(ev.Time, phases.StepDone, "")
			c.step(ev.Time, d)
		}
	}
	return c.rows
}

// endLoad ends the serving variant's load row, if open: done when a step
// follows, else as the variant ended, with its evidence.
func (c *stepRows) endLoad(at time.Time, state, evidence string) {
	if c.load < 0 {
		return
	}
	r := &c.rows[c.load]
	r.state, r.finish = state, at
	if evidence != "" {
		r.reason = evidence + "; " + r.reason
	}
	c.load = -1
}

// step adds or ends a step's row.
func (c *stepRows) step(at time.Time, d phases.RunStep) {
	key := c.variant + "/" + d.Name
	if i, ok := c.open[key]; ok && d.State != phases.StepStarted {
		c.rows[i].state, c.rows[i].finish, c.rows[i].reason = d.State, at, d.Reason
		delete(c.open, key)
		return
	}
	c.rows = append(c.rows, stepRow{run: c.run, name: d.Name, state: d.State, start: at, reason: d.Reason, variant: c.variant})
	if d.State == phases.StepStarted {
		c.open[key] = len(c.rows) - 1
	} else {
		c.rows[len(c.rows)-1].finish = at
	}
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
		n.p("| %d | %s | %s | %s | %s | %s |\n", r.run, r.label(), state, n.clock(r.start), dur, mdCell(r.reason))
	}
	n.ln("")
	n.ln(loadsLine(rows) + "\n")
}

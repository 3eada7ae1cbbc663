package notespane

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// runKey runs the campaign's remaining steps.
var runKey = key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "run the remaining campaign steps"))

// checkTitles are the steps as the checklist names them (short enough for
// three columns at 80).
var checkTitles = map[string]string{
	campaignrun.Doctor: "doctor", campaignrun.Serve: "serve", campaignrun.Macro: "sweep", campaignrun.FreeGPUs: "free GPUs", campaignrun.Micro: "GEMMs (micro)",
	campaignrun.NCCL: "collectives", campaignrun.Restart: "profiler restart", campaignrun.Profile: "profile",
	campaignrun.LeaveServer: "leave server", campaignrun.Notebook: "notebook",
}

// checkMarks are the states' marks.
var checkMarks = map[string]string{
	phases.StepDone: "✓", phases.StepStarted: "▶", phases.StepFailed: "✗", phases.StepStalled: "!",
	phases.StepSkipped: "–", phases.StepStopped: "■", phases.StepPending: "·",
}

// stepView is one step as the checklist shows it.
type stepView struct {
	state  string
	reason string
	manual bool // done by hand in a pane
	// changed is what differs from the parameters the step was done
	// with ("macro.concurrency: 1,8 → 1,4"): a run does it again.
	changed []string
}

// checklist is the campaign's steps folded from the journal: the latest
// word of a run on each step, and the phases done by hand (which count as
// done).
func checklist(events []phases.Event, id phases.RunIdentity, params map[string]map[string]string, running bool) map[string]stepView {
	out := map[string]stepView{}
	for _, ev := range events {
		if d, ok := ev.Data.(phases.RunStep); ok {
			out[d.Name] = stepView{state: d.State, reason: d.Reason}
		}
	}
	done := campaignrun.DoneSteps(events, id)
	changed := campaignrun.ChangedSteps(done, params)
	for name, sp := range done {
		if v := out[name]; v.state == phases.StepStarted && running {
			continue // done earlier, being done again now
		}
		out[name] = stepView{state: phases.StepDone, manual: sp.Manual, reason: out[name].reason, changed: changed[name]}
	}
	for name, v := range out {
		if v.state == phases.StepStarted && !running {
			out[name] = stepView{state: phases.StepStopped, reason: "cut short (no end in the journal)"}
		}
	}
	return out
}

// doctorWord names the checks of the latest doctor run that did not pass
// ("" when all did): the step is done, but what it warned of is worth a line.
func doctorWord(events []phases.Event) string {
	var names []string
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			if d.Name == phases.Doctor {
				names = nil
			}
		case phases.DoctorCheck:
			if d.Status != phases.CheckOK {
				names = append(names, d.Name+" "+d.Status)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "doctor: " + strings.Join(names, ", ") + " (profdeck doctor gives each with its fix)"
}

// runDoneMsg says the campaign run this pane started has ended.
type runDoneMsg struct {
	res *campaignrun.Result
	err error
}

// keepRunEvent reports whether the checklist needs ev.
func keepRunEvent(ev phases.Event) bool {
	switch ev.Data.(type) {
	case phases.RunStarted, phases.RunStep, phases.RunFinished, phases.PhaseStarted, phases.PhaseFinished, phases.LevelResult,
		phases.DoctorCheck:
		return true
	}
	return false
}

// startRun is the r key: run the remaining steps.
func (m *Model) startRun() tea.Cmd {
	if m.d.RunCampaign == nil || m.d.Ctx == nil {
		return common.Error(errors.New("the campaign cannot be run from here (no host or campaign)"))
	}
	if m.running {
		return common.Status("the campaign is already running")
	}
	m.running = true
	m.layout()
	ctx, fn := m.d.Ctx, m.d.RunCampaign
	return tea.Batch(common.Status("running the campaign's remaining steps"), func() tea.Msg {
		res, err := fn(ctx)
		return runDoneMsg{res: res, err: err}
	})
}

// runDone reports how the run ended.
func (m *Model) runDone(msg runDoneMsg) tea.Cmd {
	m.running = false
	m.layout()
	if msg.res == nil {
		if msg.err == nil {
			msg.err = errors.New("no result")
		}
		return common.Error(fmt.Errorf("campaign: %w", msg.err))
	}
	var bad []string
	for _, s := range msg.res.Steps {
		switch s.State {
		case phases.StepDone, phases.StepPending:
		default:
			bad = append(bad, strings.TrimPrefix(s.Variant+" ", " ")+s.Name+" "+s.State)
		}
	}
	switch {
	case errors.Is(msg.err, campaignrun.ErrInterrupted) || errors.Is(msg.err, context.Canceled):
		return common.Status("campaign: interrupted; r resumes at the step it was in")
	case len(bad) > 0:
		return common.Error(fmt.Errorf("campaign: %s (see the checklist on Notes)", strings.Join(bad, ", ")))
	}
	return common.Status("campaign: every step done; notebook " + msg.res.Notebook)
}

// checklistLines draws the checklist: a title with the count, the steps in
// three columns, and the step that needs a word (running, failed, stalled,
// skipped) with its reason.
func (m *Model) checklistLines(w int) []string {
	if m.d.RunCampaign == nil && !m.hadRun {
		return nil // no campaign to run here, and none ran
	}
	var params map[string]map[string]string
	if m.d.Campaign != nil {
		params = m.d.Campaign.StepParams()
	}
	states := checklist(m.runEvents, m.d.RunIdentity, params, m.running)
	steps, loads := m.checkSteps()
	done := 0
	for _, s := range steps {
		if states[s].state == phases.StepDone {
			done++
		}
	}
	head := fmt.Sprintf("Campaign steps · %d/%d done · %d load(s)", done, len(steps), loads)
	hint := " · r runs the remaining steps"
	if done == len(steps) {
		hint = " · every step done" // r has nothing left to run
	}
	if m.running {
		hint = " · running"
	}
	out := []string{components.Truncate(m.st.title.Render(head)+m.st.subtle.Render(hint), w)}
	colW := max(w/3, 10)
	var word string
	for _, name := range steps {
		if v := states[name]; word == "" && v.reason != "" && v.state != phases.StepDone {
			word = checkTitles[name] + " " + v.state + ": " + v.reason
		}
		if v := states[name]; word == "" && len(v.changed) > 0 {
			word = checkTitles[name] + " changed since done (" + strings.Join(v.changed, "; ") + "): r does it again"
		}
	}
	if word == "" {
		word = doctorWord(m.runEvents)
	}
	rows := (len(steps) + 2) / 3
	for row := range rows {
		var line strings.Builder
		for col := 0; col < 3 && row+rows*col < len(steps); col++ {
			name := steps[row+rows*col]
			line.WriteString(m.checkCell(name, states[name], colW))
		}
		out = append(out, components.Truncate(line.String(), w))
	}
	if word != "" {
		out = append(out, components.Truncate(m.st.warn.Render(word), w))
	}
	return out
}

// checkSteps are the steps of the order the campaign's run takes, and
// the loads they make when every step is done: each variant's server one
// more.
func (m *Model) checkSteps() ([]string, int) {
	order, leave, variants := campaignrun.OrderClassic, campaignrun.LeaveServing, 0
	if c := m.d.Campaign; c != nil {
		order, leave, variants = c.RunOrder(), c.Run.LeaveServer, campaignrun.VariantLoads(c.Server.Launch, c.VariantSpecs())
	}
	steps := campaignrun.StepsFor(order)
	return steps, campaignrun.Loads(steps, leave) + variants
}

// checkCell is one step: its mark and title, padded to the column.
func (m *Model) checkCell(name string, v stepView, w int) string {
	state := v.state
	if state == "" {
		state = phases.StepPending
	}
	text := checkMarks[state] + " " + checkTitles[name]
	if name == campaignrun.Serve || name == campaignrun.Restart {
		text += " [load]"
	}
	if v.manual {
		text += " (by hand)"
	}
	if len(v.changed) > 0 {
		text = "~ " + checkTitles[name] + " (changed)"
	}
	text = components.Truncate(text, w-1)
	pad := strings.Repeat(" ", max(w-components.Width(text), 0))
	if len(v.changed) > 0 {
		return m.st.warn.Render(text) + pad
	}
	switch state {
	case phases.StepDone:
		return m.st.good.Render(text) + pad
	case phases.StepFailed, phases.StepStalled:
		return m.st.bad.Render(text) + pad
	case phases.StepStarted:
		return m.st.bold.Render(text) + pad
	case phases.StepSkipped, phases.StepStopped:
		return m.st.warn.Render(text) + pad
	}
	return m.st.subtle.Render(text) + pad
}

package gpupane

import (
	"fmt"

	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/components"
)

// TitleLine is the pane's title and the last run's label, with the
// SIMULATED mark at the end of the line as on the other panes, in w cells.
func (r *Runner) TitleLine(title string, w int) string {
	st := r.D.Styles
	s := st.Title.Render(title)
	if r.Label != "" {
		s += " " + st.Bold.Render(r.Label)
	}
	sim := ""
	if r.D.Simulated() {
		sim = st.HeaderSim.Render("SIMULATED")
	}
	return components.Spread(s, sim, w)
}

// Status is what the status lines say in the states only a pane knows.
type Status struct {
	Progress phases.Progress // the latest progress of the run
	Done     string          // after a run that ended well
	Empty    bool            // no results yet
	Hint     string          // shown when idle with no results
}

// StatusLines are the lines under the title: the server stop, the progress
// of a run, the busy-GPU banner with its keys, the last run's outcome, or
// the hint of what s does.
func (r *Runner) StatusLines(s Status, w int) []string {
	st := r.D.Styles
	line := func(style lipgloss.Style, text string) []string {
		return []string{style.Render(components.Truncate(text, w))}
	}
	switch {
	case r.Stopping:
		return line(st.Warn, "stopping the server to free the GPUs…")
	case r.RunControl.Active():
		p := s.Progress
		verb := "running"
		if r.State == common.RunCancelling {
			verb = "cancelling"
		}
		bar := components.Bar{Full: st.BarFull, Empty: st.BarEmpty}.Count(p.Done, p.Total, 20)
		return []string{components.Truncate(fmt.Sprintf("%s %s %d/%d %s", bar, verb, p.Done, p.Total, p.Text), w)}
	case r.StopErr != "":
		return line(st.Bad, "error: "+r.StopErr)
	case r.State == common.RunBusy:
		var out []string
		for _, l := range components.Wrap(r.Busy.Error(), w-2) {
			out = append(out, st.BannerWarn.Render(l))
		}
		return append(out, components.Wrap("x: stop the server (as the Load phase does) and run · f: run on the busy GPUs · s: check again", w)...)
	case r.State == common.RunFailed:
		return line(st.Bad, "error: "+r.Err.Error())
	case r.State == common.RunCancelled:
		return line(st.Good, cancelledText)
	case r.State == common.RunFinished:
		return line(st.Good, s.Done)
	case s.Empty:
		var out []string // the whole hint: the pane has the room while idle
		for _, l := range components.Wrap(s.Hint, w) {
			out = append(out, st.Subtle.Render(l))
		}
		return out
	}
	return nil
}

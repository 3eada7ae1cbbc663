package gpubench

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/components"
)

// TitleLine is the pane's title, the last run's label and the SIMULATED
// mark, cut to w.
func (r *Runner) TitleLine(title string, w int) string {
	st := r.D.Styles
	s := st.Title.Render(title)
	if r.Label != "" {
		s += " " + st.Bold.Render(r.Label)
	}
	if r.D.Simulated() {
		s += " " + st.HeaderSim.Render("SIMULATED")
	}
	return components.Truncate(s, w)
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
	switch {
	case r.State == StoppingServer:
		return []string{st.Warn.Render(components.Truncate("stopping the server to free the GPUs…", w))}
	case r.State == Running || r.State == Cancelling:
		p := s.Progress
		verb := "running"
		if r.State == Cancelling {
			verb = "cancelling"
		}
		bar := components.Bar{Full: st.BarFull, Empty: st.BarEmpty}.Count(p.Done, p.Total, 20)
		return []string{components.Truncate(fmt.Sprintf("%s %s %d/%d %s", bar, verb, p.Done, p.Total, p.Text), w)}
	case r.Busy != nil:
		return []string{
			st.BannerWarn.Render(components.Truncate(r.Busy.Error(), w-2)),
			components.Truncate("x: stop the server (as the Load phase does) and run · f: run on the busy GPUs · s: check again", w),
		}
	case r.Failed:
		return []string{st.Bad.Render(components.Truncate("error: "+r.Msg, w))}
	case r.Msg != "":
		return []string{st.Good.Render(components.Truncate(r.Msg, w))}
	case r.Done:
		return []string{st.Good.Render(components.Truncate(s.Done, w))}
	case s.Empty:
		return []string{st.Subtle.Render(components.Truncate(s.Hint, w))}
	}
	return nil
}

package gpubench

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
)

// Fit cuts s to w cells, marking the cut with "…".
func Fit(s string, w int) string { return ansi.Truncate(s, w, "…") }

// ProgressBar is a bar of width cells, done of total filled.
func ProgressBar(done, total, width int) string {
	if total <= 0 {
		return strings.Repeat("░", width)
	}
	n := min(width, done*width/total)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

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
	return Fit(s, w)
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
		return []string{st.Warn.Render(Fit("stopping the server to free the GPUs…", w))}
	case r.State == Running || r.State == Cancelling:
		p := s.Progress
		verb := "running"
		if r.State == Cancelling {
			verb = "cancelling"
		}
		bar := ProgressBar(p.Done, p.Total, 20)
		return []string{Fit(fmt.Sprintf("%s %s %d/%d %s", st.BarFull.Render(bar), verb, p.Done, p.Total, p.Text), w)}
	case r.Busy != nil:
		return []string{
			st.BannerWarn.Render(Fit(r.Busy.Error(), w-2)),
			Fit("x: stop the server (as the Load phase does) and run · f: run on the busy GPUs · s: check again", w),
		}
	case r.Failed:
		return []string{st.Bad.Render(Fit("error: "+r.Msg, w))}
	case r.Msg != "":
		return []string{st.Good.Render(Fit(r.Msg, w))}
	case r.Done:
		return []string{st.Good.Render(Fit(s.Done, w))}
	case s.Empty:
		return []string{st.Subtle.Render(Fit(s.Hint, w))}
	}
	return nil
}

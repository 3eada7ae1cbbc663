package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/report"
)

// follow prints the run's progress as the session delivers it, rewrites the
// notebook after every step, and copies every event to jsonl.
func follow(ctx context.Context, sess *report.Session, saver *report.Autosave, log io.Writer, jsonl io.Writer, observe func(phases.Event)) {
	if log == nil {
		log = io.Discard
	}
	var enc *json.Encoder
	if jsonl != nil {
		enc = json.NewEncoder(jsonl)
	}
	seen := map[string]bool{} // distinct errors already printed
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-sess.Updates():
			if observe != nil {
				observe(ev)
			}
			if enc != nil {
				_ = enc.Encode(ev)
			}
			if line := progressLine(ev, seen); line != "" {
				fmt.Fprintf(log, "%s %s\n", ev.Time.Format("15:04:05"), line)
			}
			if s, ok := ev.Data.(phases.RunStep); ok && s.State != phases.StepStarted {
				saver.Kick()
			}
		}
	}
}

// progressLine is an event in one line for the run's stderr ("" to skip);
// a level adds a line for each warning and each error not in seen.
func progressLine(ev phases.Event, seen map[string]bool) string {
	switch d := ev.Data.(type) {
	case phases.RunStarted:
		s := "run: steps " + strings.Join(d.Steps, ", ")
		if len(d.Resumed) > 0 {
			s += " (done earlier: " + strings.Join(d.Resumed, ", ") + ")"
		}
		for _, step := range slices.Sorted(maps.Keys(d.Changed)) {
			what := "doing it again (--keep keeps the earlier one)"
			if d.Kept {
				what = "kept as done (--keep)"
			}
			s += fmt.Sprintf("\nrun: %s changed since it was done (%s): %s", step, strings.Join(d.Changed[step], "; "), what)
		}
		return s
	case phases.RunChanged:
		var s []string
		for _, step := range slices.Sorted(maps.Keys(d.Changed)) {
			what := "doing it again (--keep keeps the earlier one)"
			if d.Kept {
				what = "kept as done (--keep): the notebook marks its parts"
			}
			s = append(s, fmt.Sprintf("run: %s is out of date after the sweep (%s): %s", step, strings.Join(d.Changed[step], "; "), what))
		}
		return strings.Join(s, "\n")
	case phases.ProfileSummary:
		return profileLine(d)
	case phases.RunStep:
		if d.Reason == "" {
			return fmt.Sprintf("step %s: %s", d.Name, d.State)
		}
		return fmt.Sprintf("step %s: %s: %s", d.Name, d.State, d.Reason)
	case phases.ServerEvent:
		return fmt.Sprintf("  server %s: %s", d.Action, d.Detail)
	case phases.Milestone:
		if d.Value != "" {
			return fmt.Sprintf("  load %s: %s", d.Stage, d.Value)
		}
		return fmt.Sprintf("  load %s at %s", d.Stage, units.Duration(d.AtS))
	case phases.Stall:
		return "  load " + load.StallText(&d)
	case phases.LoadFailure:
		return "  load failed: " + load.FailureText(&d) + tailText(d.Tail, "    | ")
	case phases.LevelResult:
		s := "  " + LevelLine(d)
		for _, x := range macro.LevelDetail(d, seen) {
			s += "\n           " + x
		}
		return s
	case phases.MacroWarning:
		return "  warning: " + d.Text
	case phases.NCCLWarning:
		return "  nccl warning: " + d.Text
	case phases.MacroPath:
		return "  " + macro.PathLine(d, nil)
	case phases.Plateau:
		s := fmt.Sprintf("  plateau: C=%d at %.1f tok/s", d.Concurrency, d.OutputThroughput)
		if d.Reason != "" {
			s += fmt.Sprintf("\n  verdict (%s): %s", d.Reason, macro.VerdictLine(&d))
		}
		return s
	case phases.SLOMet:
		return "  slo: " + d.Text
	case phases.ScriptError:
		return "  error: " + d.Err
	case phases.DoctorCheck:
		return "  " + strings.TrimSuffix(DoctorLines([]phases.DoctorCheck{d}), "\n")
	}
	return ""
}

// StepsTable is the run's steps as a table: step, state, start, duration,
// reason.
func StepsTable(res *campaignrun.Result) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATE\tSTART\tTOOK\tREASON")
	for _, s := range res.Steps {
		start, took := "-", "-"
		if !s.Started.IsZero() {
			start = s.Started.Format("15:04:05")
		}
		if !s.Finished.IsZero() && !s.Started.IsZero() {
			took = units.Span(s.Finished.Sub(s.Started))
		}
		state := s.State
		if s.Earlier {
			state += " (earlier)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", stepLabel(s), state, start, took, oneLine(s.Reason, 90))
	}
	tw.Flush()
	return b.String()
}

// stepLabel is a step's name, a variant's behind its name ("cap64: serve").
func stepLabel(s campaignrun.StepResult) string {
	if s.Variant != "" {
		return s.Variant + ": " + s.Name
	}
	return s.Name
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// tailText is an exit's last log lines (all but the last, which the
// failure names), one a line after a newline, each behind prefix.
func tailText(tail []string, prefix string) string {
	if len(tail) < 2 {
		return ""
	}
	var b strings.Builder
	for _, l := range tail[:len(tail)-1] {
		b.WriteString("\n" + prefix + l)
	}
	return b.String()
}

// profileLine is a profile window in one line, with its level and kind.
func profileLine(d phases.ProfileSummary) string {
	where := "a window"
	if d.Level > 0 {
		where = fmt.Sprintf("C=%d", d.Level)
		if d.Window != "" {
			where += " " + d.Window
		}
	}
	return fmt.Sprintf("  profile (%s): communication %.1f%% of device time", where, 100*d.CommunicationShare)
}

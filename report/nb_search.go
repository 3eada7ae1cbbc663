package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// searchLines are the SLO search: its answer with its interval and the
// runs it took, then each level it ran and its verdict.
func (n *nb) searchLines(s *phases.Search) {
	if s == nil {
		return
	}
	n.p("**SLO search (%s):** %s\n\n", s.Mode, s.Text)
	if len(s.Steps) == 0 {
		return
	}
	n.ln("| step | " + s.Unit + " | runs | within the SLO | 95% interval | verdict |")
	n.ln("|---|---:|---:|---:|---|---|")
	for _, st := range s.Steps {
		verdict := "meets"
		if !st.Met {
			verdict = "misses (" + st.Why + ")"
		}
		if st.Uncertain {
			verdict += ", inside its noise"
		}
		if st.ClientBound {
			verdict += ", client-bound"
		}
		n.p("| %s | %g | %d | %.0f%% | %.0f–%.0f%% | %s |\n", st.Phase, st.Value, st.Runs, 100*st.Share, 100*st.ShareLow, 100*st.ShareHigh, verdict)
	}
	n.p("\nA level meets the SLO when at least %.0f%% of its requests (failed ones counted as missing it) met every bound and it was not over-saturated; "+
		"one whose share's 95%% interval held %.0f%% was run again (up to 3 runs) before it was judged.\n\n", 100*s.RequiredShare, 100*s.RequiredShare)
}

// scheduleLines are each open-loop level's schedule against what was sent.
func (n *nb) scheduleLines(levels []phases.LevelResult) {
	var out []string
	for _, l := range levels {
		sc := l.Schedule
		if sc == nil {
			continue
		}
		line := fmt.Sprintf("- %g req/s (%s arrivals): sent %.3g req/s of %.3g scheduled; scheduling delay p50 %.1f ms, p99 %.1f ms; %s",
			l.Rate, sc.Arrivals, sc.AchievedRate, sc.ScheduledRate, sc.P50DelayMs, sc.P99DelayMs, macro.LatencyWords(sc.LatencyFrom))
		if sc.FellBehind {
			line += " — **the client fell behind**"
		}
		if l.OverSaturated {
			line += " — **over-saturated**"
		}
		out = append(out, line)
	}
	if len(out) > 0 {
		n.ln("Open loop:\n\n" + strings.Join(out, "\n") + "\n")
	}
}

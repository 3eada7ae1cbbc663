package report

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// levelLabel is a level's first cell in the notebook's tables: its
// concurrency, its rate when it had one, and a replayed trace's speed.
func levelLabel(l phases.LevelResult) string {
	c := fmt.Sprint(l.Concurrency)
	if l.Rate > 0 {
		c += fmt.Sprintf(" @%.3g/s", l.Rate)
	}
	if sc := l.Schedule; sc != nil && sc.TraceSpeed > 0 {
		c += fmt.Sprintf(" (the trace at %.3g×)", sc.TraceSpeed)
	}
	return c
}

// sessionLevels writes a multi-turn sweep's sessions per level and, per
// level, its turns by index: TTFT, TPOT and the prefix-cache hit rate the
// server's usage said.
func (n *nb) sessionLevels(levels []phases.LevelResult) {
	for _, l := range levels {
		s := l.Sessions
		if s == nil {
			continue
		}
		n.p("Sessions at %d users (thinking %gs between turns): %d begun, %d completed, %d failed",
			s.Users, s.ThinkTimeS, s.Started, s.Completed, s.Failed)
		if s.ContextEnded > 0 {
			n.p(", %d ended at the model's context", s.ContextEnded)
		}
		if s.Completed > 0 {
			n.p("; %.1f turns each, duration p50 %.2f s, p90 %.2f s, max %.2f s", s.MeanTurns, s.P50DurationS, s.P90DurationS, s.MaxDurationS)
		}
		n.ln(".\n")
		n.ln("| turn | done | failed | input tokens (mean) | TTFT p50 | TTFT p90 | TPOT p50 | TPOT p90 | prefix cache hit |")
		n.ln("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, t := range s.Turns {
			turn := fmt.Sprint(t.Turn)
			if t.Turn == phases.MaxTurnIndex {
				turn += " and later"
			}
			n.p("| %s | %d | %d | %.0f | %.1f | %.1f | %.2f | %.2f | %s |\n", turn, t.Completed, t.Failed, t.MeanInputTokens,
				t.MedianTTFTms, t.P90TTFTms, t.MedianTPOTms, t.P90TPOTms, pctOrDash(t.PrefixHitRate, 100, "%.1f%%"))
		}
		n.ln("")
	}
	for _, l := range levels {
		if l.Sessions != nil {
			n.ln("Each turn sends the session's history with the server's own earlier answers. Prefix cache hit per turn: " +
				"the cached prompt tokens the server's usage said (prompt_tokens_details; vLLM with --enable-prompt-tokens-details) over the turn's prompt tokens.\n")
			return
		}
	}
}

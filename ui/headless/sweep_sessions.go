package headless

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// SessionLines are a multi-turn level's sessions and its turns by index,
// as the sweep's progress prints them under the level's line.
func SessionLines(s phases.SessionLevel) []string {
	head := fmt.Sprintf("sessions: %d users, thinking %gs between turns · %d of %d begun completed, %d failed",
		s.Users, s.ThinkTimeS, s.Completed, s.Started, s.Failed)
	if s.ContextEnded > 0 {
		head += fmt.Sprintf(", %d ended at the model's context", s.ContextEnded)
	}
	if s.Completed > 0 {
		head += fmt.Sprintf(" · %.1f turns each, duration p50 %.2fs, p90 %.2fs, max %.2fs", s.MeanTurns, s.P50DurationS, s.P90DurationS, s.MaxDurationS)
	}
	out := []string{head, fmt.Sprintf("%6s %5s %7s %16s %16s %10s", "turn", "done", "in tok", "TTFT p50/p90 ms", "TPOT p50/p90 ms", "prefix hit")}
	for _, t := range s.Turns {
		hit := "—"
		if t.PrefixHitRate != nil {
			hit = fmt.Sprintf("%.1f%%", 100**t.PrefixHitRate)
		}
		turn := fmt.Sprint(t.Turn)
		if t.Turn == phases.MaxTurnIndex {
			turn += "+"
		}
		out = append(out, fmt.Sprintf("%6s %5d %7.0f %16s %16s %10s", turn, t.Completed, t.MeanInputTokens,
			fmt.Sprintf("%.1f/%.1f", t.MedianTTFTms, t.P90TTFTms), fmt.Sprintf("%.1f/%.1f", t.MedianTPOTms, t.P90TPOTms), hit))
	}
	return out
}

package report

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A replayed trace's level shows the reuse its hash ids imply beside the
// server's prefix-cache hit rate; another level shows the hit rate alone.
func TestServerLevelsShowTraceReuse(t *testing.T) {
	hit, implied := 0.834, 0.836
	n := &nb{}
	n.serverLevels([]phases.LevelResult{
		{Rate: 14.1, Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: &hit},
			Schedule: &phases.Schedule{TraceReuse: &implied}},
		{Concurrency: 4, Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: &hit}},
	})
	out := n.b.String()
	if !strings.Contains(out, "| 83.4% (the trace implies 83.6%) |") || strings.Count(out, "the trace implies") != 1 {
		t.Fatalf("notebook:\n%s", out)
	}
}

// A speed search's levels are named by their speed in the server table,
// each with the reuse the trace implies beside the hit rate.
func TestServerLevelsNameTheSpeed(t *testing.T) {
	hit, implied := 0.81, 0.836
	n := &nb{}
	n.serverLevels([]phases.LevelResult{{Rate: 28.2, Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: &hit},
		Schedule: &phases.Schedule{TraceReuse: &implied, TraceSpeed: 8}}})
	if out := n.b.String(); !strings.Contains(out, "| 0 @28.2/s (the trace at 8×) |") || !strings.Contains(out, "81.0% (the trace implies 83.6%)") {
		t.Fatalf("notebook:\n%s", out)
	}
}

// A multi-turn level's sessions and its turns by index reach the notebook.
func TestSessionLevelsInNotebook(t *testing.T) {
	hit := 0.62
	n := &nb{}
	n.sessionLevels([]phases.LevelResult{{Concurrency: 4, Sessions: &phases.SessionLevel{Users: 4, ThinkTimeS: 2, Started: 9, Completed: 6,
		MeanTurns: 3, P50DurationS: 7.5, P90DurationS: 9, MaxDurationS: 9.5, Turns: []phases.TurnLevel{
			{Turn: 1, Completed: 9, MeanInputTokens: 40, MedianTTFTms: 20, P90TTFTms: 30, MedianTPOTms: 13, P90TPOTms: 14},
			{Turn: 2, Completed: 7, MeanInputTokens: 100, MedianTTFTms: 15, P90TTFTms: 22, MedianTPOTms: 13.4, P90TPOTms: 14, PrefixHitRate: &hit}}}}})
	out := n.b.String()
	for _, want := range []string{"Sessions at 4 users (thinking 2s between turns): 9 begun, 6 completed, 0 failed; 3.0 turns each, duration p50 7.50 s",
		"| 1 | 9 | 0 | 40 | 20.0 | 30.0 | 13.00 | 14.00 | — |", "| 2 | 7 | 0 | 100 | 15.0 | 22.0 | 13.40 | 14.00 | 62.0% |"} {
		if !strings.Contains(out, want) {
			t.Errorf("notebook lacks %q:\n%s", want, out)
		}
	}
}

// A campaign whose capacity asks for users, over a sweep that replayed a
// trace at several speeds, gets the trace's own plan beside it (the hand-
// worked case of capacity --trace: 0.6× within the SLO, 3 replicas of TP
// 4); a sweep of other arrivals gets none.
func TestNotebookPlansTheReplayedTrace(t *testing.T) {
	ask := CapacityAsk{Users: 2000, Think: 30e9, SLO: "tpot=50ms", Headroom: 0.2}
	got := traceSpeedPlan(speedCurve(), ask)
	for _, want := range []string{"the trace traces/day.jsonl as recorded (1×, 3 req/s on average)", "3 replica(s) × 4 GPUs (TP 4) = 12 GPUs",
		"replays it at up to 0.6× within the SLO"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q: %q", want, got)
		}
	}
	if got := traceSpeedPlan(knownCurve(), ask); got != "" {
		t.Errorf("a sweep without a trace: %q", got)
	}
}

// An open-loop level's goodput is named by its rate and a replay's speed,
// not by a concurrency it did not have.
func TestGoodputLineNamesTheReplay(t *testing.T) {
	n := &nb{}
	n.goodputLines([]phases.LevelResult{{Rate: 7.054, Goodput: &phases.Goodput{Share: 1, Met: true, RequestGoodput: 6.16, TokenGoodput: 228.4},
		Schedule: &phases.Schedule{TraceSpeed: 2}}})
	if out := n.b.String(); !strings.Contains(out, "- 7.054 req/s (the trace at 2×): goodput 6.16 req/s") {
		t.Fatalf("notebook:\n%s", out)
	}
}

// A sweep that replayed a trace names no plateau and asks for no higher
// concurrencies: what comes next is its speed search, then its plan.
func TestSummaryOfAReplay(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	level := phases.New(at, phases.KindMacroLevel, phases.LevelResult{Rate: 7.054, Completed: 24, Schedule: &phases.Schedule{TraceSpeed: 2}})
	c := &classified{runs: map[string][]*phaseRun{phases.Macro: {{events: []phases.Event{level}}}}}
	if got := nextStep(c, nil, BudgetResult{}); !strings.Contains(got, "--search speed") {
		t.Errorf("next after a replay: %q", got)
	}
	n := &nb{}
	n.summary(c, nil)
	if out := n.b.String(); !strings.Contains(out, "**Plateau:** none: the sweep replayed a trace") || strings.Contains(out, "higher concurrencies") {
		t.Errorf("summary:\n%s", out)
	}
	c.runs[phases.Macro][0].events = append(c.runs[phases.Macro][0].events, phases.New(at, phases.KindMacroSearch, phases.Search{Mode: phases.SearchSpeed, Done: true}))
	if got := nextStep(c, nil, BudgetResult{}); !strings.Contains(got, "capacity --trace FILE") {
		t.Errorf("next after a speed search: %q", got)
	}
}

package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// TestTrackerSaysLevelRequestsAndETA: the sweep's level, its requests
// done of planned, the level's time left from its progress and the
// sweep's from the levels still to come.
func TestTrackerSaysLevelRequestsAndETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tr := newTracker(t0)
	ev := func(at time.Duration, kind string, d any) { tr.observe(phases.New(t0.Add(at), kind, d)) }
	ev(0, phases.KindRunStarted, phases.RunStarted{Steps: []string{"doctor", "serve", "macro", "notebook"}})
	ev(0, phases.KindRunStep, phases.RunStep{Name: "macro", State: phases.StepStarted})
	ev(0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro, Params: map[string]any{"concurrency": []int{1, 2, 4, 8}}})
	ev(0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 1, Requests: 16})
	ev(2*time.Second, phases.KindMacroTick, phases.MacroTick{Concurrency: 1, Completed: 4, LevelProgress: 0.25, LevelElapsedS: 2})
	if p := tr.report(t0.Add(2 * time.Second)); p.PhaseETAS != 0 || !strings.Contains(p.Text, "C=1 (1 of 4): 4 of 16 requests, ETA 6s, then 3 level(s)") {
		t.Fatalf("before two levels: %+v", p)
	}
	ev(10*time.Second, phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 16})
	ev(10*time.Second, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 2, Requests: 16})
	ev(16*time.Second, phases.KindMacroLevel, phases.LevelResult{Concurrency: 2, Completed: 16})
	ev(16*time.Second, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 4, Requests: 16})
	ev(20*time.Second, phases.KindMacroTick, phases.MacroTick{Concurrency: 4, Completed: 8, LevelProgress: 0.5, LevelElapsedS: 4})
	p := tr.report(t0.Add(20 * time.Second))
	if p.Level != "C=4" || p.LevelIndex != 3 || p.Levels != 4 || p.Done != 8 || p.Planned != 16 || p.StepIndex != 3 || p.Steps != 4 {
		t.Fatalf("progress %+v", p)
	}
	// The level: 4 s for half, 4 s left; the sweep: one more level at the
	// mean of the last two, 10 s and 6 s.
	if p.ETAS != 4 || p.PhaseETAS != 4+8 {
		t.Fatalf("eta %v, phase eta %v, want 4 and 12", p.ETAS, p.PhaseETAS)
	}
	for _, want := range []string{"step macro (3 of 4)", "C=4 (3 of 4): 8 of 16 requests", ", ETA 4s", "sweep ~12s", "20s in"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("progress %q lacks %q", p.Text, want)
		}
	}
}

// TestTrackerSaysScriptItemsAndETA: a GPU script's items done of planned
// and the time left at its pace.
// TestTrackerSaysRunningOnlyWhileOpen: a phase with nothing more to say is
// "running" from its start to its finish, not after.
func TestTrackerSaysRunningOnlyWhileOpen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tr := newTracker(t0)
	tr.observe(phases.New(t0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}))
	if p := tr.report(t0.Add(time.Second)); !strings.Contains(p.Text, "nccl running") {
		t.Fatalf("open: %q", p.Text)
	}
	tr.observe(phases.New(t0.Add(time.Second), phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.NCCL}))
	if p := tr.report(t0.Add(2 * time.Second)); strings.Contains(p.Text, "running") || p.Phase != phases.NCCL {
		t.Fatalf("closed: %+v", p)
	}
}

func TestTrackerSaysScriptItemsAndETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tr := newTracker(t0)
	tr.observe(phases.New(t0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Micro}))
	tr.observe(phases.New(t0.Add(20*time.Second), phases.KindMicroProgress, phases.Progress{Done: 10, Total: 40, Text: "M=8"}))
	p := tr.report(t0.Add(20 * time.Second))
	if p.Done != 10 || p.Planned != 40 || p.ETAS != 60 || !strings.Contains(p.Text, "micro 10 of 40 (M=8), ETA 1m00s") {
		t.Fatalf("progress %+v", p)
	}
}

// TestSweepSaysWhereItStands: a sweep quiet for longer than
// --progress-every says its level and requests on stderr, and --jsonl
// gets progress events among the request records.
func TestSweepSaysWhereItStands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "r.jsonl")
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := SweepMain(ctx, []string{"--host", "sim", "--concurrency", "1", "--requests", "12", "--output-len", "48",
		"--progress-every", "300ms", "--jsonl", jsonl}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "progress: C=1 (1 of 1): ") || !strings.Contains(errb.String(), " of 12 requests") {
		t.Fatalf("no progress line in stderr:\n%s", errb.String())
	}
	b, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	progress, records := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Kind string                 `json:"kind"`
			Data phases.CommandProgress `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch ev.Kind {
		case phases.KindProgress:
			progress++
			if ev.Data.Phase != phases.Macro || ev.Data.Text == "" {
				t.Errorf("progress event %+v", ev.Data)
			}
		case "":
			records++
		}
	}
	if progress == 0 || records < 12 {
		t.Fatalf("%d progress events, %d records in\n%s", progress, records, b)
	}
}

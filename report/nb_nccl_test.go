package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A figure the NCCL script left out (its warning event) goes through the
// journal and reaches the notebook, with its time, in the NCCL section.
func TestNotebookNCCLWarnings(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	warn := "between GEMMs: the graph with all-reduces at M=8 was not slower than the GEMMs alone (2.114 ms vs 2.120 ms): no figure"
	evs := []phases.Event{
		phases.New(at, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}),
		phases.New(at.Add(time.Second), phases.KindNCCLBurst, phases.NCCLBurst{M: 8, Count: 123, Bytes: 114688, TotalMs: 4.2, PerOpUs: 34, NProc: 2, GraphMs: 2, GraphPerOpUs: 16}),
		phases.New(at.Add(2*time.Second), phases.KindNCCLWarning, phases.NCCLWarning{M: 8, Text: warn}),
		phases.New(at.Add(2*time.Second), phases.KindNCCLError, phases.ScriptError{What: "cuda graph capture of all_reduce", Step: 64, Err: "operation not permitted when stream is capturing"}),
		phases.New(at.Add(3*time.Second), phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.NCCL, Outcome: phases.OutcomeDone}),
	}
	p := filepath.Join(t.TempDir(), "c.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err := ReadJournalFile(p)
	if err != nil || len(rr.Events) != len(evs) || len(rr.Skipped) != 0 {
		t.Fatalf("journal: %v, %d events, skipped %v", err, len(rr.Events), rr.Skipped)
	}
	if w, ok := rr.Events[2].Data.(phases.NCCLWarning); !ok || w.Text != warn || w.M != 8 {
		t.Fatalf("warning read back as %#v", rr.Events[2].Data)
	}
	b, err := RenderNotebook(rr.Events, goldenOpts())
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	i, k := strings.Index(md, "**warning** "+warn), strings.Index(md, "All-reduce burst of one decode step")
	if i < 0 || k < 0 {
		t.Fatalf("notebook lacks the warning or the burst table:\n%s", md)
	}
	if !strings.Contains(md[:i], "09:00:02") {
		t.Errorf("the warning is not timed:\n%s", md)
	}
	// The script's error says what failed, then at which M.
	if !strings.Contains(md, "**error** cuda graph capture of all_reduce at step M=64: operation not permitted") {
		t.Errorf("the error is not said in order:\n%s", md)
	}
}

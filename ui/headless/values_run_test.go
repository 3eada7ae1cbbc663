package headless

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/report"
)

// A hostile journal line naming a plateau at C=20,000,000 made `run
// --redo profile` open 20 million streams: the profile now takes only a
// level a capture can hold, and says why it profiled C=1 alone.
func TestRunProfileIgnoresHostilePlateau(t *testing.T) {
	ctx, path := simRunSetup(t, "a profile on the simulated host", simCampaign, 2*time.Minute)
	jpath := filepath.Join(filepath.Dir(path), "nb.journal.jsonl")
	j, err := report.OpenJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, ev := range []phases.Event{
		phases.New(now, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro}),
		phases.New(now, phases.KindMacroPlateau, phases.Plateau{Concurrency: 20_000_000, OutputThroughput: 1}),
		phases.New(now, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone}),
	} {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	o := runCmd(t, ctx, path, "--phases", "profile", "--redo", "profile")
	s := stepState(o.rep, campaignrun.Profile)
	if s.State != phases.StepDone || !strings.Contains(s.Reason, "plateau C=20000000 is not a level a capture takes") || !strings.Contains(s.Reason, "C=1 only") {
		t.Fatalf("profile: %+v\n%s", s, o.stderr)
	}
	rr, err := report.ReadJournalFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range rr.Events {
		if d, ok := ev.Data.(phases.ProfileSummary); ok && d.Level != 1 {
			t.Errorf("a capture at C=%d", d.Level)
		}
	}
}

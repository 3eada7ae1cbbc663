package headless

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/localfs/smalldisk"
)

// A run whose journal fills its disk (a 48 KiB tmpfs) stops there with
// exit 3 and says so, instead of going on with every step "done" and a
// journal cut mid-line.
func TestRunJournalOnFullDiskStopsWithExit3(t *testing.T) {
	small := smalldisk.Mount(t, 48<<10)
	text := strings.Replace(simCampaign, "notebook: nb.md\n", "notebook: nb.md\njournal: "+filepath.Join(small, "j.jsonl")+"\n", 1)
	ctx, path := simRunSetup(t, "a campaign on the simulated host", text, 3*time.Minute)
	o := runCmd(t, ctx, path)
	if o.code != ExitStepFailed || !strings.Contains(o.stderr, "no space left on device") || !strings.Contains(o.stderr, "the run was stopped") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 3 saying the journal failed", o.code, o.stderr)
	}
	done := 0
	for _, s := range o.rep.Steps {
		if s.State == phases.StepDone {
			done++
		}
	}
	if done == len(o.rep.Steps) {
		t.Fatalf("every step done although the journal failed:\n%s", o.stderr)
	}
}

package headless

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
)

// A check that fails for a step the run will do stops the run before the
// server is started; a run without that step goes on, and --skip-doctor
// leaves the checks out.
func TestRunDoctorStopsBeforeTheLoad(t *testing.T) {
	text := strings.Replace(simCampaign, "micro:\n", "micro:\n  python: no-such-python3\n", 1)
	ctx, path := simRunSetup(t, "campaign runs on the simulated host", text, 2*time.Minute)
	dir := filepath.Dir(path)
	o := runCmd(t, ctx, path)
	doc := stepState(o.rep, campaignrun.Doctor)
	if o.code != ExitStepFailed || doc.State != phases.StepFailed || !strings.Contains(doc.Reason, "checks failed: python") {
		t.Fatalf("exit %d, doctor %+v\n%s", o.code, doc, o.stderr)
	}
	if s := stepState(o.rep, campaignrun.Serve); s.State != phases.StepSkipped || !strings.Contains(s.Reason, "the doctor's python check(s) failed") {
		t.Errorf("serve: %+v", s)
	}
	if got := startedSteps(t, filepath.Join(dir, "nb.journal.jsonl")); strings.Join(got, ",") != "doctor,notebook" {
		t.Errorf("started %v: the run went past the doctor", got)
	}
	// The sweep alone does not need python: the check only warns.
	o = runCmd(t, ctx, path, "--phases", "load")
	if doc := stepState(o.rep, campaignrun.Doctor); o.code != ExitOK || doc.State != phases.StepDone || !strings.Contains(doc.Reason, "warning") {
		t.Fatalf("--phases load: exit %d, doctor %+v\n%s", o.code, doc, o.stderr)
	}
	o = runCmd(t, ctx, path, "--phases", "load", "--skip-doctor")
	if doc := stepState(o.rep, campaignrun.Doctor); o.code != ExitOK || doc.Name != "" {
		t.Fatalf("--skip-doctor: exit %d, doctor %+v\n%s", o.code, doc, o.stderr)
	}
}

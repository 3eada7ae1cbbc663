package headless

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/campaignrun"
)

// An edited campaign is not silently taken as done: a step done with other
// parameters is done again and run says what changed; --keep keeps it.
func TestRunRedoesChangedSteps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("campaigns on the simulated host")
	}
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	journal := filepath.Join(dir, "nb.journal.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if o := runCmd(t, ctx, path, "--phases", "macro", "--skip-doctor"); o.code != 0 {
		t.Fatalf("first run: exit %d\n%s", o.code, o.stderr)
	}
	edit := func(old, new string) {
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("concurrency: [1, 8]", "concurrency: [1, 4]")
	o := runCmd(t, ctx, path, "--phases", "macro", "--skip-doctor")
	want := "run: macro changed since it was done (macro.concurrency: 1,8 → 1,4): doing it again"
	if o.code != 0 || !strings.Contains(o.stderr, want) || !slices.Contains(startedSteps(t, journal), campaignrun.Macro) {
		t.Fatalf("edited: exit %d, want %q and the sweep run again:\n%s", o.code, want, o.stderr)
	}
	edit("duration: 1s", "duration: 2s")
	o = runCmd(t, ctx, path, "--phases", "macro", "--skip-doctor", "--keep")
	if o.code != 0 || !strings.Contains(o.stderr, "(macro.duration: 1s → 2s): kept as done (--keep)") || slices.Contains(startedSteps(t, journal), campaignrun.Macro) {
		t.Errorf("--keep: exit %d, want the sweep kept:\n%s", o.code, o.stderr)
	}
	if s := stepState(o.rep, campaignrun.Macro); !strings.Contains(s.Reason, "kept (--keep): macro.duration: 1s → 2s") {
		t.Errorf("macro step %+v", s)
	}
	o = runCmd(t, ctx, path, "--phases", "macro", "--skip-doctor")
	if !strings.Contains(o.stderr, "macro.duration: 1s → 2s") {
		t.Errorf("after --keep the change is still there to say:\n%s", o.stderr)
	}
}

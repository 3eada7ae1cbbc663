package headless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/notespane"
	"github.com/profdeck/profdeck/ui/panes/profilepane"
)

// One answer, told once: the demo's campaign on the simulated host, read
// in the notebook, `run --json`, `explain` and the Notes and Profile panes
// at 120×40, says the same plateau, verdict and budget everywhere (the
// figures of each view rendered from one value). Then the README's edit
// of the sweep's input length and a run again: the steps measured at the
// sweep's levels are out of date, said and done again; with --keep (and
// the sweep redone) each part of the old workload is marked, never
// combined silently.
func TestCrossViewOneAnswer(t *testing.T) {
	// The server's batch cap at 16 puts the plateau at C=16 (its verdict
	// max_num_seqs), so the levels, GEMMs and profile windows stay small.
	camp := strings.NewReplacer("--port 8000", "--port 8000 --max-num-seqs 16",
		"concurrency: [1, 8]", "concurrency: [1, 16, 32]", "duration: 1s", "duration: 3s",
		"input_len: 32", "input_len: 128", "output_len: 8", "output_len: 32", "  batch: [1, 8]\n", "  batch: [1, 16]\n",
		"stall_after: 2s", "stall_after: 30s").Replace(simCampaign) // three loads on a busy machine: none taken for a stall
	ctx, path := simRunSetup(t, "the demo's campaign on the simulated host, three runs", camp, 8*time.Minute)
	o := runCmd(t, ctx, path)
	if o.code != 0 || o.rep.Budget.Plateau == nil {
		t.Fatalf("exit %d, plateau %v\n%s", o.code, o.rep.Budget.Plateau, o.stderr)
	}
	dir := filepath.Dir(path)
	journal := journalIn(t, dir)
	events := readEvents(t, journal)
	bud := o.rep.Budget
	if got := report.Budget(events); got.Plateau.Headline != bud.Plateau.Headline || got.Single.Headline != bud.Single.Headline {
		t.Fatalf("the journal's budget is not run --json's:\n%s\n%s", got.Plateau.Headline, bud.Plateau.Headline)
	}
	p := lastPlateauOf(events)
	nb := readText(t, filepath.Join(dir, "nb.md"))
	checkNotebookAnswers(t, nb, bud, p)
	checkExplain(t, ctx, journal, bud, p)
	checkPanes(t, events, bud)

	// The README's edit, then run: the sweep and every step measured at
	// its levels again, nothing of the old workload in the budget.
	edit(t, path, "input_len: 128", "input_len: 256")
	o = runCmd(t, ctx, path)
	if o.code != 0 || !strings.Contains(o.stderr, "micro changed since it was done (sweep.input_len: 128 → 256): doing it again") {
		t.Fatalf("exit %d, the run does not say micro is out of date:\n%s", o.code, o.stderr)
	}
	for _, s := range []string{"macro", "micro", "nccl", "profile"} {
		if st := stepState(o.rep, s); st.Earlier {
			t.Errorf("%s kept from the old workload: %s", s, st.Reason)
		}
	}
	checkMarked(t, o.rep.Budget, 256, false)

	// With --keep and only the sweep redone, the kept parts are marked in
	// the budget, its headline and the notebook.
	edit(t, path, "input_len: 256", "input_len: 512")
	o = runCmd(t, ctx, path, "--keep", "--redo", "macro")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	checkMarked(t, o.rep.Budget, 512, true)
	if nb := readText(t, filepath.Join(dir, "nb.md")); !strings.Contains(nb, "(**measured at input 256; the sweep at input 512**)") {
		t.Errorf("the notebook does not mark the kept parts")
	}
}

// checkNotebookAnswers: the Summary, in the first 24 lines, says the
// plateau and its verdict, TPOT at C=1 and at the plateau and the budget
// as run --json has them, and what to try next without repeating the
// plateau's fix.
func checkNotebookAnswers(t *testing.T, nb string, bud report.BudgetResult, p *phases.Plateau) {
	t.Helper()
	head := strings.Join(strings.SplitN(nb, "\n", 25)[:24], "\n")
	for _, want := range []string{
		fmt.Sprintf("- **Plateau:** C=%d", p.Concurrency), "`" + p.Reason + "`",
		"- **TPOT:** C=1 " + strings.TrimPrefix(bud.Single.TPOTLabel(), "TPOT "),
		"at the plateau C=" + fmt.Sprint(p.Concurrency) + " " + strings.TrimPrefix(bud.Plateau.TPOTLabel(), "TPOT "),
		"- **Budget at the plateau:** " + bud.Plateau.Headline, "- **Next:** beyond the plateau's fix",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the notebook's first 24 lines lack %q:\n%s", want, head)
		}
	}
	for _, q := range bud.Plateau.Largest(3) {
		if !strings.Contains(head, fmt.Sprintf("%s %.0f%%", q.Name, q.Pct)) {
			t.Errorf("the Summary lacks the plateau's part %s %.0f%%", q.Name, q.Pct)
		}
	}
	if strings.Contains(head[strings.Index(head, "- **Next:**"):], p.Evidence) {
		t.Errorf("Next repeats the plateau line")
	}
	for _, b := range bud.Levels {
		if !strings.Contains(nb, fmt.Sprintf("| **TPOT** (mean; median %.2f) | **%.2f** |", b.TPOTms, b.MeanTPOTms)) {
			t.Errorf("the notebook's budget at C=%d is not run --json's mean %.2f and median %.2f", b.Concurrency, b.MeanTPOTms, b.TPOTms)
		}
	}
}

// checkExplain: explain at the plateau says the sweep's own verdict and
// quotes the budget as the notebook does.
func checkExplain(t *testing.T, ctx context.Context, journal string, bud report.BudgetResult, p *phases.Plateau) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := ExplainMain(ctx, []string{journal + "#1", "--level", fmt.Sprint(p.Concurrency)}, &out, &errb); code != 0 {
		t.Fatalf("explain: exit %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.HasPrefix(s, p.Reason+": "+p.Evidence) || !strings.Contains(s, "budget at C="+fmt.Sprint(p.Concurrency)+": "+bud.Plateau.Headline) {
		t.Errorf("explain says:\n%s\nthe sweep: %s: %s\nthe budget: %s", s, p.Reason, p.Evidence, bud.Plateau.Headline)
	}
}

// checkPanes: the Notes pane at 120×40 shows each budget's TPOT, mean and
// median, and its parts as run --json rounds them; the Profile pane the
// mean TPOT the budget splits.
func checkPanes(t *testing.T, events []phases.Event, bud report.BudgetResult) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &common.Deps{Ctx: ctx, Session: report.NewSession(ctx, nil), Styles: common.NewStyles(common.DefaultTheme()),
		Keys: common.DefaultKeyMap(), Now: time.Now, Campaign: campaign.Defaults()}
	notes := notespane.New(d)
	notes.SetSize(120, 40)
	notes.Update(common.EventsMsg{At: time.Now(), Events: events, Replayed: true})
	v := ansi.Strip(notes.View())
	for _, b := range []report.BudgetSplit{bud.Single, *bud.Plateau} {
		if !strings.Contains(v, b.TPOTLabel()) {
			t.Errorf("the Notes pane lacks %q:\n%s", b.TPOTLabel(), v)
		}
		for _, q := range b.Split {
			want := strings.Replace(fmt.Sprintf(" %.2f %.0f%%", q.Ms, q.Pct), " -0%", " 0%", 1) // a share rounding to 0 reads 0%, never -0%
			if !strings.Contains(v, want) {
				t.Errorf("the Notes pane lacks C=%d %s %.2f ms %.0f%%:\n%s", b.Concurrency, q.Name, q.Ms, q.Pct, v)
			}
		}
	}
	prof := profilepane.New(d)
	prof.SetSize(120, 40)
	prof.Update(common.EventsMsg{At: time.Now(), Events: events, Replayed: true})
	v = ansi.Strip(prof.View())
	found := false
	for _, b := range bud.Levels {
		found = found || strings.Contains(v, fmt.Sprintf("of mean TPOT %.2fms at C=%d", b.MeanTPOTms, b.Concurrency))
	}
	if !found {
		t.Errorf("the Profile pane quotes no budget's mean TPOT:\n%s", v)
	}
}

// checkMarked: every part of the budget marked as measured under another
// input length than the sweep's says the sweep's, in its headline and a
// warning; at the plateau each part of a step kept (stale) is marked, and
// none when every step was done again.
func checkMarked(t *testing.T, bud report.BudgetResult, input int, stale bool) {
	t.Helper()
	if bud.Plateau == nil {
		t.Fatal("no plateau")
	}
	for _, q := range bud.Plateau.Split {
		if q.Step != "" && q.Step != phases.Macro && q.Name != report.PartNotAcc && (q.Stale != "") != stale {
			t.Errorf("at the plateau C=%d %s (%s): marked %q", bud.Plateau.Concurrency, q.Name, q.Step, q.Stale)
		}
	}
	for _, b := range bud.Levels {
		for _, q := range b.Split {
			if q.Step == "" || q.Step == phases.Macro || q.Name == report.PartNotAcc {
				continue
			}
			kept := q.Stale != ""
			if kept && (!strings.Contains(q.Stale, fmt.Sprintf("the sweep at input %d", input)) || !strings.Contains(b.Headline, "* ") ||
				!strings.Contains(strings.Join(b.Warnings, " "), "not measured together")) {
				t.Errorf("C=%d %s: marked %q, headline %q, warnings %q", b.Concurrency, q.Name, q.Stale, b.Headline, b.Warnings)
			}
		}
	}
}

func journalIn(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(m) != 1 {
		t.Fatalf("journals in %s: %v", dir, m)
	}
	return m[0]
}

func readEvents(t *testing.T, path string) []phases.Event {
	t.Helper()
	rr, err := report.ReadJournalFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return rr.Events
}

func lastPlateauOf(events []phases.Event) *phases.Plateau {
	var p *phases.Plateau
	for _, ev := range events {
		if d, ok := ev.Data.(phases.Plateau); ok {
			p = &d
		}
	}
	return p
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func edit(t *testing.T, path, from, to string) {
	t.Helper()
	b := readText(t, path)
	if !strings.Contains(b, from) {
		t.Fatalf("%s lacks %q", path, from)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(b, from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

package report

import (
	"strings"
	"testing"
)

// The H100 campaign served the baseline and two variants, each a load of
// its own: the notebook's steps table lists each variant's load and sweep,
// and the loads line under it counts three.
func TestNotebookCountsTheVariantsLoads(t *testing.T) {
	rr, err := ReadJournalFile(h100Campaign)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RenderNotebook(rr.Events, NotebookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nb := string(b)
	i := strings.Index(nb, "## Campaign steps")
	if i < 0 {
		t.Fatal("no Campaign steps section")
	}
	steps := nb[i:]
	steps = steps[:strings.Index(steps, "Loads of the model")+40]
	for _, want := range []string{"| 1 | cap64: serve | done | 09:16:14 |", "| 1 | cap64: macro | done |",
		"| 1 | chunked: serve | done |", "| 1 | chunked: macro | done |", "launch: python3 ", "Loads of the model: run 1: 3."} {
		if !strings.Contains(steps, want) {
			t.Errorf("the steps table has no %q:\n%s", want, steps)
		}
	}
	if strings.Count(steps, "| macro |") != 1 {
		t.Errorf("the baseline's sweep listed %d times, want once:\n%s", strings.Count(steps, "| macro |"), steps)
	}
}

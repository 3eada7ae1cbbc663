package headless_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/headless"
)

// twoSweeps is the seed journal and a sweep document, to compare.
func twoSweeps(t *testing.T, dir string) (string, string) {
	t.Helper()
	var levels []phases.LevelResult
	rr, _ := report.ReadJournalFile(seedJournal)
	for _, ev := range rr.Events {
		if l, ok := ev.Data.(phases.LevelResult); ok {
			l.OutputThroughput *= 1.5
			levels = append(levels, l)
		}
	}
	bp := filepath.Join(dir, "b.json")
	writeSweepJSON(t, bp, levels, nil)
	return seedJournal, bp
}

// An input inside -o's charts folder is refused before any work:
// `compare x.charts/pareto.svg b.json -o x.md` would draw over it.
func TestCompareRefusesAnInputInTheChartsFolder(t *testing.T) {
	dir := t.TempDir()
	_, b := twoSweeps(t, dir)
	in := filepath.Join(dir, "x.charts", "pareto.svg")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(b)
	if err := os.WriteFile(in, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, se := runCLI(t, headless.CompareMain, in, b, "-o", filepath.Join(dir, "x.md"))
	if got, _ := os.ReadFile(in); code != headless.ExitBadInput || string(got) != string(orig) || !strings.Contains(se, "charts folder") {
		t.Fatalf("exit %d, input kept %v, stderr %q: want exit 2 naming the charts folder", code, string(got) == string(orig), se)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.md")); err == nil {
		t.Fatal("x.md written although refused")
	}
}

// -o - is stdout: the markdown there (no charts), the human text on
// stderr, and no file named "-".
func TestCompareMarkdownToStdout(t *testing.T) {
	dir := t.TempDir()
	a, b := twoSweeps(t, dir)
	a, err := filepath.Abs(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, so, se := runCLI(t, headless.CompareMain, a, b, "-o", "-")
	if code != 0 || !strings.HasPrefix(so, "# Comparison of 2 sweeps") || strings.Contains(so, "pareto.svg") || !strings.Contains(se, "Pareto") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, so, se)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Fatal("a file named - was written")
	}
	if code, _, se := runCLI(t, headless.CompareMain, a, b, "-o", "-", "--json", "-"); code != headless.ExitBadInput {
		t.Fatalf("-o - --json -: exit %d, %s", code, se)
	}
}

// A link to /dev/null as -o gets no charts folder beside it; a link to a
// file elsewhere gets its charts beside its target.
func TestCompareOutputLinks(t *testing.T) {
	dir := t.TempDir()
	a, b := twoSweeps(t, dir)
	null := filepath.Join(dir, "null.md")
	if err := os.Symlink(os.DevNull, null); err != nil {
		t.Fatal(err)
	}
	if code, _, se := runCLI(t, headless.CompareMain, a, b, "-o", null); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if _, err := os.Stat(filepath.Join(dir, "null.charts")); err == nil {
		t.Fatal("-o to /dev/null made a charts folder")
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(filepath.Join(elsewhere, "real.md"), link); err != nil {
		t.Fatal(err)
	}
	if code, _, se := runCLI(t, headless.CompareMain, a, b, "-o", link); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "real.charts", "pareto.svg")); err != nil {
		t.Fatalf("no chart beside the link's target: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "link.charts")); err == nil {
		t.Fatal("charts beside the link, not its target")
	}
}

// report -o to a link to /dev/null draws no charts folder.
func TestReportToDevNullLinkMakesNoChartsFolder(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "nb.md")
	if err := os.Symlink(os.DevNull, null); err != nil {
		t.Fatal(err)
	}
	if code, _, se := runCLI(t, headless.ReportMain, seedJournal, "-o", null); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if _, err := os.Stat(filepath.Join(dir, "nb.charts")); err == nil {
		t.Fatal("a charts folder beside a link to /dev/null")
	}
}

// report refuses a journal that lies in the notebook's charts folder.
func TestReportRefusesAJournalInTheChartsFolder(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "nb.charts", "j.jsonl")
	if err := os.MkdirAll(filepath.Dir(j), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(seedJournal)
	if err := os.WriteFile(j, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, se := runCLI(t, headless.ReportMain, j, "-o", filepath.Join(dir, "nb.md"))
	if code != headless.ExitBadInput || !strings.Contains(se, "charts folder") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming the charts folder", code, se)
	}
}

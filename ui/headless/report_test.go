package headless_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestReportFromACutOffJournal(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "k25.jsonl")
	b := mustRead(t, seedJournal)
	// A crash cut the last line in half.
	b = append(b, []byte(`{"t":"2026-11-29T09:51:00Z","phase":"notes","kind":"notes.note","data":{"text":"never fin`)...)
	os.WriteFile(jp, b, 0o600)

	code, out, errOut := runCLI(t, headless.ReportMain, jp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	nev := seedCount(t)
	cut := fmt.Sprintf("line %d: incomplete last line", nev+1)
	if !strings.Contains(errOut, cut) {
		t.Fatalf("the cut-off line is not reported: %q", errOut)
	}
	nb := filepath.Join(dir, "k25.md")
	if !strings.Contains(out, fmt.Sprintf("wrote %s (%d events, 1 lines skipped)", nb, nev)) || !strings.Contains(out, "charts in") {
		t.Fatalf("stdout %q", out)
	}
	md := string(mustRead(t, nb))
	if !strings.Contains(md, cut) || strings.Contains(md, "never fin") {
		t.Fatal("notebook footer does not name the skipped line, or holds half a note")
	}
	if _, err := os.Stat(filepath.Join(dir, "k25.charts", "macro-1-throughput-tpot.svg")); err != nil {
		t.Fatal(err)
	}

	// -o after the journal, and to stdout.
	code, out, _ = runCLI(t, headless.ReportMain, jp, "-o", "-", "--utc")
	if code != 0 || !strings.HasPrefix(out, "# k25b6000bench1\n") || strings.Contains(out, ".charts/") {
		t.Fatalf("stdout notebook: exit %d\n%s", code, out)
	}
}

func TestReportErrors(t *testing.T) {
	code, _, errOut := runCLI(t, headless.ReportMain)
	if code != 2 || !strings.Contains(errOut, "need a JOURNAL") {
		t.Fatalf("no args: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, headless.ReportMain, "/nonexistent/j.jsonl")
	if code != 2 || !strings.Contains(errOut, "/nonexistent/j.jsonl") {
		t.Fatalf("missing journal: %d %q", code, errOut)
	}
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("hello\nworld\n"), 0o644)
	code, _, errOut = runCLI(t, headless.ReportMain, p)
	if code != 2 || !strings.Contains(errOut, "not a profdeck journal") {
		t.Fatalf("text file: %d %q", code, errOut)
	}
}

func writeSweepJSON(t *testing.T, path string, levels []phases.LevelResult, plateau *phases.Plateau) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"url": "http://127.0.0.1:8000", "model": "moonshotai/Kimi-K2.5", "api": "chat",
		"started": "2026-11-29T11:00:00Z", "levels": levels, "plateau": plateau})
	os.WriteFile(path, b, 0o644)
}

func TestCompareJournalWithSweepJSON(t *testing.T) {
	dir := t.TempDir()
	// B: the same sweep with speculative decoding: TPOT halved at C=1.
	var levels []phases.LevelResult
	rr, _ := report.ReadJournalFile(seedJournal)
	for _, ev := range rr.Events {
		if l, ok := ev.Data.(phases.LevelResult); ok && l.Concurrency <= 64 {
			l.MedianTPOTms /= 2
			l.OutputThroughput *= 1.5
			levels = append(levels, l)
		}
	}
	levels[0].MedianTPOTms = 6.20
	levels = append(levels, phases.LevelResult{Concurrency: 512, MedianTPOTms: 300})
	bp := filepath.Join(dir, "spec.json")
	writeSweepJSON(t, bp, levels, &phases.Plateau{Concurrency: 64, OutputThroughput: 2086})

	code, out, errOut := runCLI(t, headless.CompareMain, seedJournal, bp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"A: " + seedJournal + " (journal, sweep 1 of 1 (started 2026-11-29 09:26:40 UTC), 9 levels)",
		"B: " + bp + " (sweep JSON, started 2026-11-29T11:00:00Z, 8 levels)",
		"plateau: 1536 tok/s from C=128 → 2086 tok/s from C=64",
		"(only in A)", "(only in B)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The C=1 TPOT p50 row: 12.40 → 6.20 ms, -50.0%.
	found := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 7 && strings.Join(f[:2], " ") == "TPOT p50" && f[2] == "12.40" && f[3] == "→" && f[4] == "6.20" && f[5] == "ms" && f[6] == "-50.0%" {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("no C=1 TPOT p50 row 12.40 → 6.20 ms -50.0%%:\n%s", out)
	}
	if !strings.Contains(out, "output tok/s") || !strings.Contains(out, "+50.0%") {
		t.Fatalf("throughput change missing:\n%s", out)
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCLI(t, headless.CompareMain, "only-one")
	if code != 2 || !strings.Contains(errOut, "want 2 file argument(s), got 1") {
		t.Fatalf("%d %q", code, errOut)
	}
	empty := filepath.Join(dir, "empty.json")
	writeSweepJSON(t, empty, nil, nil)
	code, _, errOut = runCLI(t, headless.CompareMain, empty, seedJournal)
	if code != 2 || !strings.Contains(errOut, empty+": sweep JSON has no levels") {
		t.Fatalf("%d %q", code, errOut)
	}
	noSweep := filepath.Join(dir, "j.jsonl")
	j, _ := report.OpenJournal(noSweep)
	j.Append(phases.New(fixedNow, phases.KindNotesNote, phases.Note{Text: "just a note"}))
	j.Close()
	code, _, errOut = runCLI(t, headless.CompareMain, noSweep, noSweep)
	if code != 2 || !strings.Contains(errOut, "no finished sweep level") {
		t.Fatalf("%d %q", code, errOut)
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("\x00\x01garbage"), 0o644)
	code, _, errOut = runCLI(t, headless.CompareMain, junk, noSweep)
	if code != 2 || !strings.Contains(errOut, "neither a sweep JSON document") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestCompareTwoSweepsOfOneJournalAsJSON(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "k25.jsonl")
	j, err := report.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	acc := 0.7
	for run, tpot := range []float64{12.5, 6.25} {
		j.Append(phases.New(fixedNow, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro"}))
		lv := phases.LevelResult{Concurrency: 1, MedianTPOTms: tpot, OutputThroughput: 80 * float64(run+1)}
		if run == 1 {
			lv.Server = &phases.ServerLevel{Available: true, SpecAcceptRate: &acc}
		}
		j.Append(phases.New(fixedNow, phases.KindMacroLevel, lv))
		j.Append(phases.New(fixedNow, phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "macro"}))
	}
	j.Close()
	code, out, errOut := runCLI(t, headless.CompareMain, jp+"#1", jp+"#-1", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(c.A.Source, "sweep 1 of 2") || !strings.Contains(c.B.Source, "sweep 2 of 2") || len(c.Levels) != 1 {
		t.Fatalf("%+v", c)
	}
	got := map[string]report.Delta{}
	for _, d := range c.Levels[0].Metrics {
		got[d.Metric] = d
	}
	if d := got["TPOT p50"]; d.ChangePct == nil || *d.ChangePct != -50 || *d.A != 12.5 || *d.B != 6.25 {
		t.Fatalf("TPOT p50 %+v", d)
	}
	if d := got["spec accept"]; d.A != nil || d.B == nil || *d.B != 70 || d.ChangePct != nil {
		t.Fatalf("spec accept %+v", d)
	}
	// The text form says what cannot be compared.
	_, out, _ = runCLI(t, headless.CompareMain, jp+"#1", jp+"#2")
	if !regexp.MustCompile(`spec accept\s+—\s+→\s+70\.0\s+%\s+n/a`).MatchString(out) {
		t.Fatalf("text:\n%s", out)
	}
	code, _, errOut = runCLI(t, headless.CompareMain, jp+"#3", jp)
	if code != 2 || !strings.Contains(errOut, "no sweep #3: the journal holds 2 sweep(s)") {
		t.Fatalf("%d %q", code, errOut)
	}
}

// seedJournal is report's seed journal: a K2.5 campaign with a sweep.
var seedJournal = filepath.Join("..", "..", "report", "testdata", "seed.jsonl")

var fixedNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func seedCount(t *testing.T) int {
	t.Helper()
	rr, err := report.ReadJournalFile(seedJournal)
	if err != nil {
		t.Fatal(err)
	}
	return len(rr.Events)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// report -c FILE reads the campaign's journal and writes its notebook.
func TestReportFromCampaign(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k25.journal.jsonl"), mustRead(t, seedJournal), 0o644)
	cf := filepath.Join(dir, "profdeck.yaml")
	os.WriteFile(cf, []byte("name: k25\nnotebook: out/k25.md\njournal: k25.journal.jsonl\n"), 0o644)
	code, out, errOut := runCLI(t, headless.ReportMain, "-c", cf, "--no-charts")
	nb := filepath.Join(dir, "out", "k25.md")
	if code != 0 || !strings.Contains(out, "wrote "+nb) {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	if md := string(mustRead(t, nb)); !strings.HasPrefix(md, "# k25b6000bench1\n") {
		t.Fatalf("notebook:\n%.200s", md)
	}
	// A journal named on the command line wins; -o wins over the campaign's notebook.
	other := filepath.Join(dir, "other.md")
	code, _, errOut = runCLI(t, headless.ReportMain, "-c", cf, seedJournal, "-o", other, "--no-charts")
	if code != 0 || len(mustRead(t, other)) == 0 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	code, _, errOut = runCLI(t, headless.ReportMain, "-c", filepath.Join(dir, "missing.yaml"))
	if code != 2 || !strings.Contains(errOut, "missing.yaml") {
		t.Fatalf("missing campaign: exit %d %q", code, errOut)
	}
}

// compare --json FILE writes the document and still prints the table;
// --json - prints the document alone on stdout, the table on stderr; an
// output path that is one of the inputs is refused before anything runs.
func TestCompareJSONFile(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "cmp.json")
	code, out, errOut := runCLI(t, headless.CompareMain, seedJournal, seedJournal, "--json", doc)
	if code != 0 || !strings.Contains(out, "TPOT p50") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	var c report.Comparison
	if err := json.Unmarshal(mustRead(t, doc), &c); err != nil || len(c.Levels) != 9 {
		t.Fatalf("%v: %d levels", err, len(c.Levels))
	}
	code, out, errOut = runCLI(t, headless.CompareMain, seedJournal, seedJournal, "--json", "-")
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || !strings.Contains(errOut, "TPOT p50") {
		t.Fatalf("exit %d: stdout %.200q stderr %.200q", code, out, errOut)
	}
	a := filepath.Join(dir, "a.jsonl")
	os.WriteFile(a, mustRead(t, seedJournal), 0o644)
	before := mustRead(t, a)
	code, _, errOut = runCLI(t, headless.CompareMain, a, seedJournal, "--json", a)
	if code != 2 || !strings.Contains(errOut, "is also an input: refusing to write over it") || string(mustRead(t, a)) != string(before) {
		t.Fatalf("exit %d %q", code, errOut)
	}
	// The old switch form: --json takes the next word, so A B leave one file.
	code, _, errOut = runCLI(t, headless.CompareMain, "--json", a, seedJournal)
	if code != 2 || string(mustRead(t, a)) != string(before) {
		t.Fatalf("exit %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, headless.CompareMain, a, seedJournal, "--json", filepath.Join(dir, "no", "such", "x.json"))
	if code != 2 || !strings.Contains(errOut, "--json") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

// Before anything ran, report says there is no journal yet and what
// writes one, not the operating system's "no such file".
func TestReportBeforeAnyRun(t *testing.T) {
	dir := t.TempDir()
	cf := filepath.Join(dir, "profdeck.yaml")
	os.WriteFile(cf, []byte("name: k25\nnotebook: k25.md\n"), 0o644)
	code, _, errOut := runCLI(t, headless.ReportMain, "-c", cf)
	if code != 2 || !strings.Contains(errOut, "no journal yet") || !strings.Contains(errOut, "profdeck run") ||
		strings.Contains(errOut, "no such file") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

func runCLI(t *testing.T, main func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	code := main(context.Background(), args, &so, &se)
	return code, so.String(), se.String()
}

func reportMain(ctx context.Context, a []string, so, se *bytes.Buffer) int {
	return ReportMain(ctx, a, so, se)
}
func compareMain(ctx context.Context, a []string, so, se *bytes.Buffer) int {
	return CompareMain(ctx, a, so, se)
}

func TestReportFromACutOffJournal(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "k25.jsonl")
	b := mustRead(t, filepath.Join("testdata", "seed.jsonl"))
	// A crash cut the last line in half.
	b = append(b, []byte(`{"t":"2026-11-29T09:51:00Z","phase":"notes","kind":"notes.note","data":{"text":"never fin`)...)
	os.WriteFile(jp, b, 0o600)

	code, out, errOut := runCLI(t, reportMain, jp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	nev := len(seedEvents())
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
	code, out, _ = runCLI(t, reportMain, jp, "-o", "-", "--utc")
	if code != 0 || !strings.HasPrefix(out, "# k25b6000bench1\n") || strings.Contains(out, ".charts/") {
		t.Fatalf("stdout notebook: exit %d\n%s", code, out)
	}
}

func TestReportErrors(t *testing.T) {
	code, _, errOut := runCLI(t, reportMain)
	if code != 2 || !strings.Contains(errOut, "usage: profdeck report JOURNAL") {
		t.Fatalf("no args: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, reportMain, "/nonexistent/j.jsonl")
	if code != 2 || !strings.Contains(errOut, "/nonexistent/j.jsonl") {
		t.Fatalf("missing journal: %d %q", code, errOut)
	}
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("hello\nworld\n"), 0o644)
	code, _, errOut = runCLI(t, reportMain, p)
	if code != 2 || !strings.Contains(errOut, "not a profdeck journal") {
		t.Fatalf("text file: %d %q", code, errOut)
	}
	if defaultNotebookPath("a/b.jsonl") != "a/b.md" || defaultNotebookPath("j") != "j.md" || defaultNotebookPath("x.md") != "x.md.md" {
		t.Fatal("default notebook names")
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
	rr, _ := ReadJournalFile(filepath.Join("testdata", "seed.jsonl"))
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

	code, out, errOut := runCLI(t, compareMain, filepath.Join("testdata", "seed.jsonl"), bp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"A: testdata/seed.jsonl (journal, sweep 1 of 1 (started 2026-11-29 09:26:40 UTC), 9 levels)",
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
	code, _, errOut := runCLI(t, compareMain, "only-one")
	if code != 2 || !strings.Contains(errOut, "usage: profdeck compare A B") {
		t.Fatalf("%d %q", code, errOut)
	}
	empty := filepath.Join(dir, "empty.json")
	writeSweepJSON(t, empty, nil, nil)
	code, _, errOut = runCLI(t, compareMain, empty, filepath.Join("testdata", "seed.jsonl"))
	if code != 2 || !strings.Contains(errOut, empty+": sweep JSON has no levels") {
		t.Fatalf("%d %q", code, errOut)
	}
	noSweep := filepath.Join(dir, "j.jsonl")
	j, _ := OpenJournal(noSweep)
	j.Append(note(fixedNow(), "just a note"))
	j.Close()
	code, _, errOut = runCLI(t, compareMain, noSweep, noSweep)
	if code != 2 || !strings.Contains(errOut, "no finished sweep level") {
		t.Fatalf("%d %q", code, errOut)
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("\x00\x01garbage"), 0o644)
	code, _, errOut = runCLI(t, compareMain, junk, noSweep)
	if code != 2 || !strings.Contains(errOut, "neither a sweep JSON document") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestDeltaPct(t *testing.T) {
	if p, ok := DeltaPct(12.5, 6.25); !ok || p != -50 {
		t.Fatal(p)
	}
	if _, ok := DeltaPct(0, 3); ok {
		t.Fatal("percentage of zero")
	}
	if p, _ := DeltaPct(-2, -1); p != 50 {
		t.Fatal(p)
	}
}

func FuzzParseSweep(f *testing.F) {
	f.Add([]byte(`{"levels":[{"concurrency":1,"median_tpot_ms":12.5}],"plateau":{"concurrency":1}}`))
	f.Add(mustReadF(f, filepath.Join("testdata", "seed.jsonl")))
	f.Add([]byte(`{"levels":null}`))
	f.Add([]byte("\x00\x01garbage\n" + strings.Repeat("{\n", 50)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSweep("x", data, 0)
		if err == nil {
			if len(s.Levels) == 0 {
				t.Fatal("a sweep with no levels")
			}
			var b bytes.Buffer
			WriteComparison(&b, s, s)
		}
	})
}

func mustReadF(f *testing.F, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func TestCompareTwoSweepsOfOneJournalAsJSON(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "k25.jsonl")
	j, err := OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	acc := 0.7
	for run, tpot := range []float64{12.5, 6.25} {
		j.Append(phases.New(fixedNow(), phases.KindPhaseStarted, phases.PhaseStarted{Name: "macro"}))
		lv := phases.LevelResult{Concurrency: 1, MedianTPOTms: tpot, OutputThroughput: 80 * float64(run+1)}
		if run == 1 {
			lv.Server = &phases.ServerLevel{Available: true, SpecAcceptRate: &acc}
		}
		j.Append(phases.New(fixedNow(), phases.KindMacroLevel, lv))
		j.Append(phases.New(fixedNow(), phases.KindPhaseFinished, phases.PhaseFinished{Name: "macro"}))
	}
	j.Close()
	code, out, errOut := runCLI(t, compareMain, jp+"#1", jp+"#-1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(c.A.Source, "sweep 1 of 2") || !strings.Contains(c.B.Source, "sweep 2 of 2") || len(c.Levels) != 1 {
		t.Fatalf("%+v", c)
	}
	got := map[string]Delta{}
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
	_, out, _ = runCLI(t, compareMain, jp+"#1", jp+"#2")
	if !regexp.MustCompile(`spec accept\s+—\s+→\s+70\.0\s+%\s+n/a`).MatchString(out) {
		t.Fatalf("text:\n%s", out)
	}
	code, _, errOut = runCLI(t, compareMain, jp+"#3", jp)
	if code != 2 || !strings.Contains(errOut, "no sweep #3: the journal holds 2 sweep(s)") {
		t.Fatalf("%d %q", code, errOut)
	}
}

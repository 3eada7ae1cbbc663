package headless_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/memtest"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/headless"
)

// writeHugeLineJournal writes a journal with a valid note, one line of n
// bytes, and a second note, without holding the line.
func writeHugeLineJournal(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := `{"time":"2026-11-29T10:00:00Z","phase":"session","kind":"note","data":{"text":"%s"}}` + "\n"
	fmt.Fprintf(w, line, "before")
	w.WriteString(`{"time":"2026-11-29T10:00:01Z","phase":"session","kind":"note","data":{"text":"`)
	chunk := strings.Repeat("x", 1<<16)
	for i := 0; i < n>>16; i++ {
		w.WriteString(chunk)
	}
	w.WriteString("\"}}\n")
	fmt.Fprintf(w, line, "after")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// report and compare read a journal with a 200 MB line in bounded memory:
// the line is skipped and named, the events around it are kept.
func TestHugeJournalLineBoundedMemory(t *testing.T) {
	got := memtest.Run(t, 256, func() string {
		dir := t.TempDir()
		p := filepath.Join(dir, "j.jsonl")
		writeHugeLineJournal(t, p, 200<<20)
		rr, err := report.ReadJournalFile(p)
		if err != nil {
			return err.Error()
		}
		_, cerr := report.LoadSweep(p)
		code, out, errOut := runCLI(t, headless.ReportMain, p, "-o", filepath.Join(dir, "nb.md"), "--no-charts")
		return fmt.Sprintf("events=%d skipped=%d %q compare=%v report=%d %q %q", len(rr.Events), rr.SkippedCount, rr.Skipped, cerr, code, out, errOut)
	})
	if !strings.Contains(got, "events=2 skipped=1") || !strings.Contains(got, "bytes, longer than 8 MiB, skipped") ||
		!strings.Contains(got, "no finished sweep level") || !strings.Contains(got, "report=0") {
		t.Fatalf("got %s", got)
	}
}

// report on a 1 MB random file is one line: the first skipped line and
// the count of the rest, rather than one line per skipped line.
func TestReportRandomFileFewSkippedLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "random.bin")
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	os.WriteFile(p, b, 0o644)
	_, _, errOut := runCLI(t, headless.ReportMain, p)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines on stderr:\n%s", len(lines), errOut[:min(len(errOut), 2000)])
	}
	if !strings.Contains(errOut, "line(s) skipped, the first: line 1: ") || len(errOut) > 2000 {
		t.Fatalf("stderr %q", errOut)
	}
	// The notebook's footer, too, lists a few and counts the rest.
	var sb strings.Builder
	for i := 0; i < 50; i++ {
		sb.WriteString("junk\n")
	}
	sb.WriteString(`{"time":"2026-11-29T10:00:00Z","phase":"session","kind":"note","data":{"text":"kept"}}` + "\n")
	j := filepath.Join(t.TempDir(), "j.jsonl")
	os.WriteFile(j, []byte(sb.String()), 0o644)
	code, _, _ := runCLI(t, headless.ReportMain, j, "--no-charts")
	md, _ := os.ReadFile(strings.TrimSuffix(j, ".jsonl") + ".md")
	if code != 0 || !strings.Contains(string(md), "Journal lines skipped (50)") || !strings.Contains(string(md), "… and 45 more") || strings.Count(string(md), "invalid character") > report.MaxSkippedShown {
		t.Fatalf("code %d, notebook:\n%s", code, md)
	}
}

// compare A J#N: a missing journal is said to be missing; #0 is refused.
func TestCompareJournalRef(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	writeSweepJSON(t, a, nil, nil)
	_, _, errOut := runCLI(t, headless.CompareMain, filepath.Join(dir, "J")+"#0", a)
	if !strings.Contains(errOut, "the journal "+filepath.Join(dir, "J")+": no such file") {
		t.Fatalf("missing journal: %q", errOut)
	}
	j := filepath.Join(dir, "j.jsonl")
	os.WriteFile(j, []byte("\n"), 0o644)
	_, _, errOut = runCLI(t, headless.CompareMain, j+"#0", a)
	if !strings.Contains(errOut, "#0: sweeps are numbered from 1") {
		t.Fatalf("#0: %q", errOut)
	}
}

// Bad input files exit 2, as the README promises: a missing path, an empty
// or binary file, a file that is neither a journal nor a sweep document.
func TestBadInputFilesExit2(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	bin := filepath.Join(dir, "bin")
	os.WriteFile(bin, []byte("\x00\x01\x02\xff\xfe"), 0o644)
	for _, p := range []string{filepath.Join(dir, "missing"), empty, bin, dir} {
		if code, _, errOut := runCLI(t, headless.ReportMain, p, "-o", filepath.Join(dir, "nb.md")); code != 2 || strings.Count(errOut, "\n") > report.MaxSkippedShown+2 {
			t.Errorf("report %s: exit %d, %q", p, code, errOut)
		}
		if code, _, errOut := runCLI(t, headless.CompareMain, p, p); code != 2 || !strings.Contains(errOut, p) {
			t.Errorf("compare %s: exit %d, %q", p, code, errOut)
		}
	}
}

// report on a journal of 40 MiB of events (a real campaign's fieldrig
// journal, 86 KB, repeated) is refused, exit 2, in bounded memory: it was
// read whole (a 155 MB one peaked at 615 MB).
func TestReportHugeJournalRefusedBoundedMemory(t *testing.T) {
	got := memtest.Run(t, 120, func() string {
		dir := t.TempDir()
		p := filepath.Join(dir, "j.jsonl")
		one, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", "fieldrig-h200x2.jsonl"))
		if err != nil {
			return err.Error()
		}
		f, _ := os.Create(p)
		for i := 0; i < (40<<20)/len(one); i++ {
			f.Write(one)
		}
		f.Close()
		code, _, errOut := runCLI(t, headless.ReportMain, p, "-o", filepath.Join(dir, "nb.md"), "--no-charts")
		return fmt.Sprintf("report=%d %q", code, errOut)
	})
	if !strings.Contains(got, "report=2") || !strings.Contains(got, "over 32 MiB of events: too large for a journal") {
		t.Fatalf("got %s", got)
	}
}

//go:build unix

package headless_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/ui/headless"
)

type mainFunc = func(context.Context, []string, io.Writer, io.Writer) int

func fifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// readFIFO reads what is written to the FIFO at path, in the background.
func readFIFO(path string) <-chan string {
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	return got
}

// oneLine runs a command that must refuse its input at once: exit 2 and
// one line on stderr holding want.
func oneLine(t *testing.T, main mainFunc, want string, args ...string) {
	t.Helper()
	done := make(chan [3]any, 1)
	go func() {
		code, out, errOut := runCLI(t, main, args...)
		done <- [3]any{code, out, errOut}
	}()
	select {
	case r := <-done:
		code, errOut := r[0].(int), r[2].(string)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", args, code, errOut, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%q hung", args)
	}
}

// --json through a symbolic link writes the link's target and keeps the
// link; --json to a FIFO writes into the FIFO (it used to be replaced by a
// regular file, as /dev/null was as root).
func TestJSONFollowsLinksAndWritesFIFOsInPlace(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	os.WriteFile(a, mustRead(t, seedJournal), 0o644)
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	if code, _, errOut := runCLI(t, headless.CompareMain, a, seedJournal, "--json", link); code != 0 {
		t.Fatalf("exit %d %q", code, errOut)
	}
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 || !strings.Contains(string(mustRead(t, target)), `"by_level"`) {
		t.Fatalf("link %v (%v), target %.100q", st.Mode(), err, mustRead(t, target))
	}
	p := fifo(t, filepath.Join(dir, "fifo"))
	got := readFIFO(p)
	if code, _, errOut := runCLI(t, headless.CompareMain, a, seedJournal, "--json", p); code != 0 {
		t.Fatalf("exit %d %q", code, errOut)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, `"by_level"`) {
			t.Fatalf("the FIFO's reader got %.100q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came through the FIFO")
	}
	if st, _ := os.Lstat(p); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", st.Mode())
	}
}

// report -o FIFO writes the notebook through the FIFO and makes no charts
// folder beside it; report -o DIR is refused before any chart is drawn.
func TestReportNotebookFIFOAndDirectory(t *testing.T) {
	dir := t.TempDir()
	p := fifo(t, filepath.Join(dir, "nb"))
	got := readFIFO(p)
	if code, _, errOut := runCLI(t, headless.ReportMain, seedJournal, "-o", p); code != 0 {
		t.Fatalf("exit %d %q", code, errOut)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, "end of profdeck notebook") {
			t.Fatalf("the FIFO's reader got %.100q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came through the FIFO")
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	oneLine(t, headless.ReportMain, "is a directory", seedJournal, "-o", out)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("report left %d entries in %s (charts beside a FIFO or a folder?)", len(ents), dir)
	}
}

// An output that is also an input is refused (exit 2, one line) before any
// work, and the input is left as it was.
func TestOutputThatIsAnInputRefused(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	os.WriteFile(j, mustRead(t, seedJournal), 0o644)
	jl := filepath.Join(dir, "jlink")
	os.Symlink(j, jl)
	camp := filepath.Join(dir, "profdeck.yaml")
	os.WriteFile(camp, []byte("name: t\nhost: sim\nnotebook: nb.md\njournal: j.jsonl\n"), 0o644)
	ds := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(ds, []byte(`{"prompt": "hello there", "output_len": 8}`+"\n"), 0o644)
	x := filepath.Join(dir, "x.json")
	before := map[string]string{j: string(mustRead(t, j)), camp: string(mustRead(t, camp)), ds: string(mustRead(t, ds))}
	for _, c := range []struct {
		main mainFunc
		want string
		args []string
	}{
		{headless.ReportMain, "is also the journal", []string{j, "-o", j}},
		{headless.ReportMain, "is also the journal", []string{j, "-o", filepath.Join(dir, "sub", "..", "jlink")}},
		{headless.RunMain, "is also the journal", []string{"-c", camp, "--json", jl}},
		{headless.RunMain, "is also the journal", []string{"-c", camp, "--jsonl", j}},
		{headless.RunMain, "is also the campaign file", []string{"-c", camp, "--json", camp}},
		{headless.SweepMain, "is also the campaign file", []string{"-c", camp, "--json", camp}},
		{headless.SweepMain, "is also the dataset", []string{"--host", "sim", "--dataset", "jsonl", ds, "--json", ds}},
		{headless.SweepMain, "is also --jsonl", []string{"--host", "sim", "--json", x, "--jsonl", x}},
		{headless.ExplainMain, "is also an input", []string{j, "--json", jl}},
		{headless.CompareMain, "is also an input", []string{j + "#1", seedJournal, "--json", j}},
	} {
		oneLine(t, c.main, c.want, c.args...)
	}
	for p, b := range before {
		if string(mustRead(t, p)) != b {
			t.Errorf("%s changed", p)
		}
	}
	if _, err := os.Stat(x); err == nil {
		t.Error("--json X --jsonl X left X")
	}
}

// Inputs that are not regular files are refused at once (a FIFO used to
// hang run and report; a link to /dev/zero to be read without end).
func TestSpecialInputsRefused(t *testing.T) {
	dir := t.TempDir()
	p := fifo(t, filepath.Join(dir, "fifo"))
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	camp := filepath.Join(dir, "profdeck.yaml")
	os.WriteFile(camp, []byte("name: t\nhost: sim\nnotebook: nb.md\njournal: zero\n"), 0o644)
	campFIFO := filepath.Join(dir, "fifo.yaml")
	os.WriteFile(campFIFO, []byte("name: t\nhost: sim\nnotebook: nb.md\njournal: fifo\n"), 0o644)
	for _, c := range []struct {
		main mainFunc
		want string
		args []string
	}{
		{headless.ReportMain, p + " is a FIFO, not a regular file", []string{p, "-o", filepath.Join(dir, "nb.md")}},
		{headless.ReportMain, zero + " is a character device", []string{"-c", camp}},
		{headless.ReportMain, "is a FIFO", []string{"-c", campFIFO}},
		{headless.RunMain, "journal " + zero + " is a character device", []string{"-c", camp}},
		{headless.RunMain, "is a FIFO", []string{"-c", campFIFO}},
		{headless.RunMain, "is a FIFO", []string{"-c", p}},
		{headless.ExplainMain, "is a character device", []string{zero}},
		{headless.CompareMain, "is a FIFO", []string{p, seedJournal}},
		{headless.SweepMain, "is a FIFO", []string{"--host", "sim", "--dataset", "jsonl", p}},
	} {
		oneLine(t, c.main, c.want, c.args...)
	}
}

// report -o and init under a file are bad input (exit 2), not a failure
// to run.
func TestOutputUnderAFileExit2(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	oneLine(t, headless.ReportMain, "is not a directory", seedJournal, "-o", filepath.Join(file, "x.md"))
	oneLine(t, headless.InitMain, "is not a directory", filepath.Join(file, "x.yaml"))
	oneLine(t, headless.CompareMain, "no directory", seedJournal, seedJournal, "--json", filepath.Join(file+"-missing", "x.json"))
}

// A host that can never work as typed is bad input (exit 2, one line), not
// a failure to connect: an ssh option where the name goes, a bad port, an
// empty name.
func TestBadHostSpecExit2(t *testing.T) {
	for _, h := range []string{"-oProxyCommand=touch /tmp/pwned", "gpu1:99999", "bob@"} {
		oneLine(t, headless.SweepMain, "", "--host", h, "--url", "http://127.0.0.1:1")
	}
}

// parse FILE --json FILE is refused: the log would be replaced by its
// summary.
func TestParseOutputIsInputRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(p, []byte("INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.12.0\n"), 0o644)
	oneLine(t, headless.ParseLogMain, "is also the file parsed", p, "--json", p)
	if !strings.Contains(string(mustRead(t, p)), "vLLM API server") {
		t.Fatal("the log was replaced")
	}
}

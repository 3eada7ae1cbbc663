package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

const crashHelperEnv = "PROFDECK_REPORT_CRASH_HELPER"

// TestMain lets the test binary act as the headless writer of the crash
// test when re-executed with crashHelperEnv set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		os.Exit(crashHelper(dir, os.Getenv(crashHelperEnv+"_RUN")))
	}
	os.Exit(m.Run())
}

// crashHelper journals notes and level results through a Session until it
// is killed, printing "ack TEXT" after each note's Record returned, while
// autosave rewrites the notebook every 10 ms.
func crashHelper(dir, run string) int {
	j, err := OpenJournal(filepath.Join(dir, "c.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := NewSession(context.Background(), j)
	a := NewAutosave(s, filepath.Join(dir, "c.md"), NotebookOptions{Campaign: "crash"}, 10*time.Millisecond)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	for i := 0; ; i++ {
		text := fmt.Sprintf("run %s note %d: stall at 75.8 GB?", run, i)
		if err := s.Record(phases.New(time.Now(), phases.KindNotesNote, phases.Note{Text: text, Pane: "Macro"})); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, "ack "+text)
		out.Flush()
		lv := phases.LevelResult{Concurrency: 1 << (i % 9), Completed: i, MedianTPOTms: 12.4, OutputThroughput: float64(i)}
		if err := s.Record(phases.New(time.Now(), phases.KindMacroLevel, lv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		a.Kick()
		time.Sleep(2 * time.Millisecond)
	}
}

// TestCrashSafety kills a real writer process with SIGKILL 20 times at
// random moments: every acknowledged note must be in the journal and in a
// notebook regenerated from it, and the notebook on disk must always be a
// complete version.
func TestCrashSafety(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var acked []string
	sawNotebook := 0
	for run := 0; run < 20; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, crashHelperEnv+"_RUN="+fmt.Sprint(run))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		if l, err := br.ReadString('\n'); err != nil || l != "ready\n" {
			t.Fatalf("run %d: helper did not start: %q %v %s", run, l, err, stderr.String())
		}
		// The random moment starts from the first acknowledgement, so a
		// slow start on a busy machine still kills a writer at work.
		first, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(first, "ack ") {
			t.Fatalf("run %d: no first acknowledgement: %q %v %s", run, first, err, stderr.String())
		}
		acked = append(acked, strings.TrimSuffix(strings.TrimPrefix(first, "ack "), "\n"))
		time.Sleep(time.Duration(20+rng.IntN(280)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(br)
		cmd.Wait()
		cancel()
		for _, l := range strings.SplitAfter(string(rest), "\n") {
			if strings.HasPrefix(l, "ack ") && strings.HasSuffix(l, "\n") { // a cut-off line was not an ack
				acked = append(acked, strings.TrimSuffix(strings.TrimPrefix(l, "ack "), "\n"))
			}
		}

		// The notebook on disk at the kill is a complete version, and
		// every note in it was journalled.
		md, err := os.ReadFile(filepath.Join(dir, "c.md"))
		if err == nil {
			sawNotebook++
			if !bytes.HasPrefix(md, []byte("# crash\n")) || !bytes.HasSuffix(md, []byte(NotebookEndMarker+"\n")) {
				t.Fatalf("run %d: notebook on disk is not a complete version (%d bytes, ends %q)", run, len(md), tail(md))
			}
		}
		journal, _ := os.ReadFile(filepath.Join(dir, "c.jsonl"))
		for _, l := range strings.Split(string(md), "\n") {
			if i := strings.Index(l, "**note** (Macro): "); i >= 0 {
				text := l[i+len("**note** (Macro): "):]
				if !bytes.Contains(journal, []byte(`"`+text+`"`)) {
					t.Fatalf("run %d: notebook holds a note the journal lacks: %q", run, text)
				}
			}
		}
	}
	if sawNotebook < 15 {
		t.Fatalf("the notebook existed at only %d of 20 kills", sawNotebook)
	}

	rr, err := ReadJournalFile(filepath.Join(dir, "c.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	inJournal := map[string]bool{}
	for _, ev := range rr.Events {
		if n, ok := ev.Data.(phases.Note); ok {
			inJournal[n.Text] = true
		}
	}
	out := filepath.Join(dir, "regenerated.md")
	if err := WriteNotebook(out, rr.Events, NotebookOptions{Journal: filepath.Join(dir, "c.jsonl"), NoCharts: true, Skipped: rr.Skipped, SkippedCount: rr.SkippedCount}); err != nil {
		t.Fatal(err)
	}
	md := string(mustRead(t, out))
	for _, text := range acked {
		if !inJournal[text] {
			t.Fatalf("acknowledged note %q is not in the journal", text)
		}
		if !strings.Contains(md, "**note** (Macro): "+text+"\n") {
			t.Fatalf("acknowledged note %q is not in the regenerated notebook", text)
		}
	}
	t.Logf("%d notes acknowledged over 20 kills, %d events journalled, %d lines skipped (cut off by a kill)", len(acked), len(rr.Events), len(rr.Skipped))
}

func tail(b []byte) string {
	if len(b) > 40 {
		b = b[len(b)-40:]
	}
	return string(b)
}

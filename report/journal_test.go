package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func note(t time.Time, text string) phases.Event {
	return phases.New(t, phases.KindNotesNote, phases.Note{Text: text})
}

func TestJournalRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "c.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	evs := seedEvents()
	for _, ev := range evs {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(evs[0]); err == nil {
		t.Fatal("append after close succeeded")
	}
	rr, err := ReadJournalFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Skipped) != 0 || rr.TruncatedTail {
		t.Fatalf("skipped %v", rr.Skipped)
	}
	if len(rr.Events) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(rr.Events), len(evs))
	}
	lr, ok := rr.Events[len(evs)-1].Data.(phases.ErrorEvent)
	if !ok || lr.Where != "notebook" {
		t.Fatalf("last event decoded as %#v", rr.Events[len(evs)-1].Data)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}
}

func TestJournalTruncatedTailSkippedAndRepairedOnReopen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.jsonl")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(note(t0, "first"))
	j.Close()
	// A crash in the middle of the second line.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":"2026-01-01T00:00:01Z","phase":"notes","kind":"notes.note","data":{"te`)
	f.Close()

	rr, err := ReadJournalFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !rr.TruncatedTail || len(rr.Events) != 1 || len(rr.Skipped) != 1 || !strings.Contains(rr.Skipped[0], "line 2: incomplete last line") {
		t.Fatalf("got %+v", rr)
	}

	j, err = OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(note(t0.Add(2*time.Second), "third")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	rr, _ = ReadJournalFile(p)
	if rr.TruncatedTail || len(rr.Events) != 2 || len(rr.Skipped) != 1 {
		t.Fatalf("after reopen: %d events, skipped %v, truncated %v", len(rr.Events), rr.Skipped, rr.TruncatedTail)
	}
	if rr.Events[1].Data.(phases.Note).Text != "third" {
		t.Fatalf("event after the broken line: %#v", rr.Events[1])
	}
}

func TestReadJournalSkipsBadLines(t *testing.T) {
	in := "not json\n\n" + `{"t":"2026-01-01T00:00:00Z","phase":"notes","kind":"notes.note","data":{"text":"ok"}}` + "\n" +
		`{"t":"2026-01-01T00:00:00Z","phase":"x","kind":"future.kind","data":{"a":1}}` + "\n" +
		`{"t":"2026-01-01T00:00:00Z","phase":"notes","kind":"notes.note","data":{"text":5}}` + "\n"
	rr, err := ReadJournal(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Events) != 2 || len(rr.Skipped) != 2 {
		t.Fatalf("events %d skipped %v", len(rr.Events), rr.Skipped)
	}
	if !strings.HasPrefix(rr.Skipped[0], "line 1:") || !strings.HasPrefix(rr.Skipped[1], "line 5:") {
		t.Fatalf("skipped lines named wrongly: %v", rr.Skipped)
	}
}

func FuzzReadJournal(f *testing.F) {
	var b bytes.Buffer
	for _, ev := range seedEvents()[:12] {
		line, _ := jsonLine(ev)
		b.Write(line)
	}
	f.Add(b.Bytes())
	f.Add([]byte("{\"t\":\"x\"}\n{"))
	f.Add([]byte(`{"kind":"macro.level","data":{"concurrency":"x"}}` + "\n"))
	// A long line, binary bytes, many bad lines.
	f.Add([]byte(`{"time":"2026-11-29T10:00:00Z","phase":"session","kind":"note","data":{"text":"` + strings.Repeat("x", 64<<10) + "\"}}\n"))
	f.Add([]byte("\x00\x01\xff\xfe\n\x1f\x8b\x08\x00\n"))
	f.Add([]byte(strings.Repeat("junk\n", 200)))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr, err := ReadJournal(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if len(rr.Skipped) > MaxSkippedShown || rr.SkippedCount < len(rr.Skipped) {
			t.Fatalf("%d skipped lines described, %d counted", len(rr.Skipped), rr.SkippedCount)
		}
		// Whatever was read renders.
		if _, err := RenderNotebook(rr.Events, NotebookOptions{Location: time.UTC}); err != nil {
			t.Fatal(err)
		}
		Budget(rr.Events)
	})
}

// A write that failed part-way (a full disk) may leave half a line: the next
// event, once it is acknowledged, must still read back.
func TestJournalEventAfterTornWriteReadsBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := j.Append(note(t0, "before")); err != nil {
		t.Fatal(err)
	}
	// A failed write marks the journal torn...
	f := j.f
	j.f, _ = os.Open(p) // read-only: the write fails
	if err := j.Append(note(t0.Add(time.Second), "lost")); err == nil || !j.torn {
		t.Fatalf("append on a read-only file: err %v, torn %v", err, j.torn)
	}
	j.f.Close()
	j.f = f
	// ...and the failed write left half a line behind.
	if _, err := f.WriteString(`{"t":"2026-11-29T12:00:01Z","phase":"ses`); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(note(t0.Add(2*time.Second), "after")); err != nil {
		t.Fatal(err)
	}
	if j.torn {
		t.Error("a good write leaves the journal torn")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err := ReadJournalFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, ev := range rr.Events {
		texts = append(texts, ev.Data.(phases.Note).Text)
	}
	if strings.Join(texts, ",") != "before,after" || len(rr.Skipped) != 1 {
		t.Fatalf("read back %v, skipped %v", texts, rr.Skipped)
	}
}

package report

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

func TestAutosaveWriteNowAndClose(t *testing.T) {
	s, jp := newTestSession(t)
	nbPath := filepath.Join(filepath.Dir(jp), "camp.md")
	// A temporary file left by an earlier crash is cleaned up.
	stale := filepath.Join(filepath.Dir(jp), ".camp.md.tmp-123")
	os.WriteFile(stale, []byte("half"), 0o644)
	a := NewAutosave(s, nbPath, NotebookOptions{Campaign: "camp", Now: fixedNow}, time.Hour)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("stale temporary file kept")
	}
	s.Record(note(time.Now(), "first observation"))
	p, at, err := a.WriteNow()
	if err != nil || p != nbPath || !at.Equal(fixedNow()) {
		t.Fatalf("WriteNow = %q %v %v", p, at, err)
	}
	md := string(mustRead(t, nbPath))
	if !strings.Contains(md, "first observation") || !strings.Contains(md, "# camp") {
		t.Fatalf("notebook:\n%s", md)
	}
	// The write is announced on Updates (not journalled): that is how the
	// cockpit learns it.
	saved := savedEvent(t, s)
	if d := saved.Data.(phases.NotebookSaved); d.Path != nbPath || d.Failed || d.Err != "" || !saved.Time.Equal(fixedNow()) {
		t.Fatalf("saved event %+v", saved)
	}
	s.Record(note(time.Now(), "last words"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mustRead(t, nbPath)), "last words") {
		t.Fatal("Close did not write the last note")
	}
	if err := a.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	rr, _ := ReadJournalFile(jp)
	for _, ev := range rr.Events {
		if ev.Kind == phases.KindNotesSaved {
			t.Fatal("notebook-saved event journalled")
		}
	}
}

func TestAutosaveKicksAreRateLimited(t *testing.T) {
	s, jp := newTestSession(t)
	nbPath := filepath.Join(filepath.Dir(jp), "camp.md")
	var writes atomic.Int32
	opts := NotebookOptions{NoCharts: true, Now: func() time.Time { writes.Add(1); return time.Now() }}
	a := NewAutosave(s, nbPath, opts, 300*time.Millisecond)
	defer a.Close()
	start := time.Now()
	for time.Since(start) < time.Second {
		s.Record(note(time.Now(), "n"))
		a.Kick() // never blocks
		time.Sleep(5 * time.Millisecond)
	}
	// The last kick's write comes at most one interval later.
	want := len(s.Events())
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, _ := os.ReadFile(nbPath)
		if got := strings.Count(string(md), "**note**"); got == want {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("notebook after the last kick has %d notes, session %d", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ~150 kicks over 1 s at one write per 300 ms: at most 5 writes (a
	// busy machine may manage fewer, never more).
	if n := writes.Load(); n < 1 || n > 6 {
		t.Fatalf("%d writes for a second of kicks at a 300 ms interval", n)
	}
}

func TestAutosaveReportsAFailingWriteOnce(t *testing.T) {
	s, jp := newTestSession(t)
	dir := jp // a file: nothing can be written under it
	a := NewAutosave(s, filepath.Join(dir, "x.md"), NotebookOptions{NoCharts: true}, time.Hour)
	for i := 0; i < 3; i++ {
		if _, _, err := a.WriteNow(); err == nil {
			t.Fatal("write under a file succeeded")
		}
	}
	if d := savedEvent(t, s).Data.(phases.NotebookSaved); !d.Failed || !strings.Contains(d.Err, "x.md") {
		t.Fatalf("saved event %+v", d)
	}
	n := 0
	for _, ev := range s.Events() {
		if ev.Kind == phases.KindSessionError {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d error events for three identical failures", n)
	}
	a.Close()
}

// savedEvent is the next NotebookSaved event on the session's Updates.
func savedEvent(t *testing.T, s *Session) phases.Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-s.Updates():
			if ev.Kind == phases.KindNotesSaved {
				return ev
			}
		case <-deadline:
			t.Fatal("no notebook-saved event")
		}
	}
}

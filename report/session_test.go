package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/localfs/smalldisk"
)

func newTestSession(t *testing.T) (*Session, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); j.Close() })
	return NewSession(ctx, j), p
}

func TestRecordIsOnDiskWhenItReturns(t *testing.T) {
	s, p := newTestSession(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 5; i++ {
		text := "note " + strings.Repeat("x", i)
		if err := s.Record(note(t0, text)); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), `"`+text+`"`) {
			t.Fatalf("note %q not in the journal when Record returned", text)
		}
	}
	// Ephemeral events are delivered but not journalled.
	if err := s.Record(phases.New(t0, phases.KindMacroTick, phases.MacroTick{Concurrency: 7})); err != nil {
		t.Fatal(err)
	}
	rr, _ := ReadJournalFile(p)
	if len(rr.Events) != 5 || len(s.Events()) != 5 {
		t.Fatalf("journal %d events, session %d; want 5", len(rr.Events), len(s.Events()))
	}
}

func TestRecordNeverWaitsForTheSubscriber(t *testing.T) {
	s := NewSession(t.Context(), nil)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 20000; i++ {
			s.Record(note(time.Now(), "n"))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked with nobody reading Updates")
	}
	// Every journalled event is still delivered, in order.
	for i := 0; i < 20000; i++ {
		select {
		case <-s.Updates():
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 20000 events delivered", i)
		}
	}
}

func TestUpdatesFollowJournalOrder(t *testing.T) {
	s, p := newTestSession(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // a phase
		defer wg.Done()
		for i := 0; i < 100; i++ {
			s.Sink() <- phases.New(time.Now(), phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: i})
		}
	}()
	go func() { // the operator
		defer wg.Done()
		for i := 0; i < 100; i++ {
			if err := s.Record(note(time.Now(), "n")); err != nil {
				t.Error(err)
			}
		}
	}()
	var got []phases.Event
	for len(got) < 200 {
		select {
		case ev := <-s.Updates():
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d events delivered", len(got))
		}
	}
	wg.Wait()
	rr, _ := ReadJournalFile(p)
	if len(rr.Events) != 200 {
		t.Fatalf("journal has %d events", len(rr.Events))
	}
	for i := range got {
		if got[i].Kind != rr.Events[i].Kind || !got[i].Time.Equal(rr.Events[i].Time) {
			t.Fatalf("event %d: delivered %s, journalled %s", i, got[i].Kind, rr.Events[i].Kind)
		}
	}
}

func TestSecretsNeverReachJournalOrNotebook(t *testing.T) {
	s, p := newTestSession(t)
	const key = `sk-"zq9x"-secret-4242`
	s.Redact(key)
	t0 := time.Now()
	s.Record(note(t0, "the key is "+key))
	s.Record(phases.New(t0, phases.KindSessionSystem, phases.SystemInfo{Host: "h", LaunchCommand: "vllm serve m --api-key " + key}))
	s.Record(phases.New(t0, phases.KindSessionError, phases.ErrorEvent{Where: "x", Err: "401 for key " + key}))
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "zq9x") {
		t.Fatalf("journal holds the key:\n%s", b)
	}
	if !strings.Contains(string(b), Redacted) {
		t.Fatalf("journal lacks the redaction mark:\n%s", b)
	}
	nb := filepath.Join(filepath.Dir(p), "c.md")
	a := NewAutosave(s, nb, NotebookOptions{}, time.Hour)
	if _, _, err := a.WriteNow(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	md, _ := os.ReadFile(nb)
	if strings.Contains(string(md), "zq9x") || !strings.Contains(string(md), "the key is "+Redacted) {
		t.Fatalf("notebook:\n%s", md)
	}
}

func TestUnregisteredSecretsInLaunchLinesAndLogsAreHidden(t *testing.T) {
	s, p := newTestSession(t)
	t0 := time.Now()
	s.Record(phases.New(t0, phases.KindLoadServer, phases.ServerEvent{Action: "start", Detail: "vllm serve m --api-key abc-123-xyz --max-num-batched-tokens 8192"}))
	s.Record(phases.New(t0, phases.KindLoadStall, phases.Stall{GPUs: []int{0}, Line: "non-default args: {'model': 'm', 'api_key': 'abc-123-xyz'}"}))
	s.Record(phases.New(t0, phases.KindLoadFailure, phases.LoadFailure{Kind: "exited", Line: "HF_TOKEN=abc-123-xyz python3 -m vllm"}))
	s.Record(note(t0, "tokens: max_tokens=5 stays as typed"))
	b := string(mustRead(t, p))
	if strings.Contains(b, "abc-123-xyz") {
		t.Fatalf("journal holds the key:\n%s", b)
	}
	for _, want := range []string{"--max-num-batched-tokens 8192", "'api_key': '[redacted]'", "HF_TOKEN=[redacted]", "tokens: max_tokens=5 stays as typed"} {
		if !strings.Contains(b, want) {
			t.Errorf("journal lacks %q:\n%s", want, b)
		}
	}
	evs := s.Events()
	if len(evs) != 4 || evs[1].Data.(phases.Stall).GPUs[0] != 0 {
		t.Fatalf("events %+v", evs)
	}
}

func TestSettleWaitsForRecordsUnderWay(t *testing.T) {
	s := NewSession(t.Context(), nil)
	if !s.Settle(time.Millisecond) {
		t.Fatal("an idle session is not settled")
	}
	s.begin() // a Record under way
	if s.Settle(20 * time.Millisecond) {
		t.Fatal("settled with a Record under way")
	}
	go func() { time.Sleep(20 * time.Millisecond); s.end() }()
	if !s.Settle(5 * time.Second) {
		t.Fatal("not settled after the Record ended")
	}
}

func TestJournalFailureKeepsPhaseResultsAndRefusesNotes(t *testing.T) {
	s, _ := newTestSession(t)
	s.Journal().Close() // appends now fail, as on a full or vanished disk
	if err := s.Record(note(time.Now(), "not saved")); err == nil {
		t.Fatal("a note was acknowledged although the journal failed")
	}
	s.Sink() <- phases.New(time.Now(), phases.KindMacroLevel, phases.LevelResult{Concurrency: 4})
	s.Sink() <- phases.New(time.Now(), phases.KindMacroLevel, phases.LevelResult{Concurrency: 8})
	var got []string
	deadline := time.After(5 * time.Second)
	for len(got) < 3 {
		select {
		case ev := <-s.Updates():
			got = append(got, ev.Kind)
		case <-deadline:
			t.Fatalf("delivered %v", got)
		}
	}
	// The failure is announced once, then the results follow.
	if got[0] != phases.KindSessionError || got[1] != phases.KindMacroLevel || got[2] != phases.KindMacroLevel {
		t.Fatalf("delivered %v", got)
	}
	// The notebook says it too: the failure is kept with the events.
	evs := s.Events()
	if len(evs) != 3 || evs[0].Kind != phases.KindSessionError || evs[2].Data.(phases.LevelResult).Concurrency != 8 {
		t.Fatalf("kept %+v", evs)
	}
	select {
	case <-s.Failed():
	default:
		t.Fatal("Failed is not closed after a journal error")
	}
	if len(s.Errors()) != 3 {
		t.Fatalf("errors %v", s.Errors())
	}
}

func TestJournalErrorsAreBounded(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(t.Context(), j)
	j.Close() // every append fails from here on
	for i := 0; i < 3*maxKeptErrors; i++ {
		if err := s.Record(phases.New(time.Now(), phases.KindNotesMarker, phases.Marker{Label: "m"})); err == nil {
			t.Fatal("recording into a closed journal succeeded")
		}
	}
	if n := len(s.Errors()); n != maxKeptErrors {
		t.Fatalf("kept %d errors, want %d", n, maxKeptErrors)
	}
}

// Sync returns once every event sent to the sink before it is journalled.
func TestSyncWaitsForTheSink(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewSession(ctx, nil)
	for i := 0; i < 500; i++ {
		s.Sink() <- phases.New(time.Now(), phases.KindNotesNote, phases.Note{Text: "n"})
	}
	if !s.Sync() {
		t.Fatal("Sync timed out")
	}
	if n := len(s.Events()); n != 500 {
		t.Fatalf("after Sync %d events journalled, want 500", n)
	}
	cancel()
	<-s.Done()
	if s.Sync() {
		t.Error("Sync on a stopped session reported success")
	}
}

// A journal on a full disk (a 64 KiB tmpfs): the write that does not fit
// fails, the session says so (Failed, JournalErr) and the journal holds
// whole lines only.
func TestJournalOnFullDiskFailsTheSession(t *testing.T) {
	dir := smalldisk.Mount(t, 64<<10)
	p := filepath.Join(dir, "c.jsonl")
	j, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	s := NewSession(t.Context(), j)
	smalldisk.Fill(t, dir)
	big := strings.Repeat("x", 3000)
	for i := 0; i < 100 && s.JournalErr() == nil; i++ {
		_ = s.Record(note(time.Now(), big))
	}
	select {
	case <-s.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not fail on a full disk")
	}
	if err := s.JournalErr(); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("JournalErr %v", err)
	}
}

package report

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// bigCampaign is the seed campaign plus a 30-minute load journalled every
// 5 s on 8 GPUs (360 snapshots) and 200 notes.
func bigCampaign() []phases.Event {
	evs := seedEvents()
	t0 := evs[0].Time
	for i := 0; i < 360; i++ {
		s := phases.GPUSample{Host: "gpu1"}
		for g := 0; g < 8; g++ {
			s.GPUs = append(s.GPUs, phases.GPU{Index: g, MemoryUsedMiB: f64(float64(i) * 200), MemoryTotalMiB: f64(97887)})
		}
		evs = append(evs, phases.New(t0.Add(time.Duration(i)*5*time.Second), phases.KindLoadGPUCoarse, s))
	}
	for i := 0; i < 200; i++ {
		evs = append(evs, phases.New(t0.Add(time.Duration(i)*9*time.Second), phases.KindNotesNote, phases.Note{Text: "an observation about the run", Pane: "Load"}))
	}
	return evs
}

func BenchmarkRenderNotebook(b *testing.B) {
	evs := bigCampaign()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderNotebook(evs, NotebookOptions{Location: time.UTC}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteNotebookWithCharts(b *testing.B) {
	evs := bigCampaign()
	p := filepath.Join(b.TempDir(), "k25.md")
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteNotebook(p, evs, NotebookOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudget(b *testing.B) {
	evs := bigCampaign()
	b.ReportAllocs()
	for b.Loop() {
		Budget(evs)
	}
}

// BenchmarkRecordNote is the latency of acknowledging a note: journal
// append with fsync.
func BenchmarkRecordNote(b *testing.B) {
	j, err := OpenJournal(filepath.Join(b.TempDir(), "c.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewSession(ctx, j)
	go func() {
		for range s.Updates() {
		}
	}()
	ev := phases.New(time.Now(), phases.KindNotesNote, phases.Note{Text: "stalled at 75.8 GB per GPU", Pane: "Load"})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Record(ev); err != nil {
			b.Fatal(err)
		}
	}
}

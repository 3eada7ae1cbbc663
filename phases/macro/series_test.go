package macro_test

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestLevelSeriesJournalsItsTicks: each level ends with its series (a
// journalled event) holding the figures of each of its ticks, in order,
// before its result.
func TestLevelSeriesJournalsItsTicks(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 20 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{2}, Duration: 2500 * time.Millisecond, InputLen: 16, OutputLen: 20,
		Seed: 3, NoPreflight: true}))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Run(ctx, &phases.Emitter{Out: ch}); err != nil {
		t.Fatal(err)
	}
	close(ch)
	var ticks []phases.MacroTick
	var series *phases.MacroSeries
	for ev := range ch {
		switch d := ev.Data.(type) {
		case phases.MacroTick:
			ticks = append(ticks, d)
		case phases.MacroSeries:
			series = &d
		case phases.LevelResult:
			if series == nil {
				t.Fatal("the level's result came before its series")
			}
		}
	}
	if phases.Ephemeral(phases.KindMacroSeries) {
		t.Fatal("the series is not journalled")
	}
	if series == nil || series.Concurrency != 2 || series.Len() != len(ticks) || len(ticks) < 2 {
		t.Fatalf("series %+v for %d ticks", series, len(ticks))
	}
	for i, tk := range ticks {
		if series.TPOTp50ms[i] != tk.TPOTp50ms || series.OutputTokS[i] != tk.OutputTokS || series.TTFTp50ms[i] != tk.TTFTp50ms {
			t.Fatalf("second %d: series %v/%v, tick %+v", i, series.TPOTp50ms[i], series.OutputTokS[i], tk)
		}
	}
}

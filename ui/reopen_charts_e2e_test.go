package ui_test

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
)

// withSeries is the seed journal with each level's per-second series
// before its result, as a sweep journals it: 20 seconds of TPOT 12.5 ms
// (p99 14 ms), TTFT 40 ms and 300 tok/s.
func withSeries(t *testing.T, seed []byte) []byte {
	t.Helper()
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(seed), "\n") {
		if strings.Contains(line, `"kind":"macro.level"`) {
			ev, err := phases.Decode([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			var s phases.MacroSeries
			for range 20 {
				s.Add(phases.MacroTick{TPOTp50ms: 12.5, TPOTp99ms: 14, TTFTp50ms: 40, OutputTokS: 300}, 8, 0)
			}
			s.Concurrency = ev.Data.(phases.LevelResult).Concurrency
			b, err := json.Marshal(phases.New(ev.Time, phases.KindMacroSeries, s))
			if err != nil {
				t.Fatal(err)
			}
			out.Write(append(b, '\n'))
		}
		out.WriteString(line)
	}
	return []byte(out.String())
}

// A journal reopened in the cockpit draws the Macro pane's charts from
// the levels' series, at 80×24: the figures of the sweep's last seconds
// and their columns, not empty charts reading 0.
func TestEndToEndReopenDrawsTheMacroCharts(t *testing.T) {
	needTmux(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	seed, err := os.ReadFile(filepath.Join("..", "report", "testdata", "seed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k.journal.jsonl"), withSeries(t, seed), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := "name: reopen\nhost: sim\nnotebook: k.md\njournal: k.journal.jsonl\n"
	if err := os.WriteFile(filepath.Join(dir, "profdeck.yaml"), []byte(cf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startTmux(t, 80, 24, fmt.Sprintf("cd %s && %s tui -c profdeck.yaml", dir, bin))
	s.waitFor(regexp.MustCompile(`down: nothing serves`), 20*time.Second)
	s.keys("2")
	screen := s.waitFor(regexp.MustCompile(`TPOT p50 12\.5 ms`), 10*time.Second)
	if !strings.Contains(screen, "█") || !strings.Contains(screen, "◀ plateau") {
		t.Errorf("the reopened Macro pane has no chart columns or plateau:\n%s", screen)
	}
	s.keys("q")
}

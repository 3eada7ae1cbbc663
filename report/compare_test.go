package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

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

// A level a sweep ran twice is paired with the same run of the other
// sweep, and the extra run shown as such: B's second C=1 was paired with
// A's only C=1, a spurious +232%.
func TestCompareRepeatedLevelsPairedInOrder(t *testing.T) {
	lv := func(c int, tok float64) phases.LevelResult {
		return phases.LevelResult{Concurrency: c, OutputThroughput: tok, MedianTPOTms: 10}
	}
	a := Sweep{Path: "a", Levels: []phases.LevelResult{lv(1, 100), lv(8, 500)}}
	b := Sweep{Path: "b", Levels: []phases.LevelResult{lv(1, 100), lv(1, 332), lv(8, 500)}}
	c := Compare(a, b)
	if len(c.Levels) != 3 {
		t.Fatalf("%d rows: %+v", len(c.Levels), c.Levels)
	}
	first, again := c.Levels[0], c.Levels[1]
	if first.Concurrency != 1 || first.Run != 0 || first.OnlyIn != "" || first.Metrics[0].ChangePct == nil || *first.Metrics[0].ChangePct != 0 {
		t.Errorf("C=1: %+v", first)
	}
	if again.Concurrency != 1 || again.Run != 2 || again.OnlyIn != "B" {
		t.Errorf("C=1 again: %+v, want run 2 only in B", again)
	}
	var out bytes.Buffer
	WriteComparison(&out, a, b)
	if !regexp.MustCompile(`C=1 \(run 2\) +\(only in B\)`).MatchString(out.String()) || strings.Contains(out.String(), "+232") {
		t.Errorf("comparison:\n%s", out.String())
	}
}

// A sweep that ran a level twice ([1, 1, 8]) charts one point per level;
// one that ran only C=1 twice has no chart to draw. Both drew two points
// at one x: the chart failed, and so did the notebook step, on every run.
func TestNotebookChartsRepeatedLevels(t *testing.T) {
	for _, tc := range []struct {
		levels []int
		chart  bool
	}{{[]int{1, 1}, false}, {[]int{1, 1, 8}, true}} {
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		evs := []phases.Event{phases.New(t0, phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})}
		for i, c := range tc.levels {
			evs = append(evs, phases.New(t0.Add(time.Duration(i+1)*time.Second), phases.KindMacroLevel,
				phases.LevelResult{Concurrency: c, Completed: 4, OutputThroughput: float64(100 * (i + 1)), MedianTPOTms: 10, P99TPOTms: 12}))
		}
		evs = append(evs, phases.New(t0.Add(time.Minute), phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone}))
		path := filepath.Join(t.TempDir(), "nb.md")
		if err := WriteNotebook(path, evs, NotebookOptions{Now: fixedNow, Location: time.UTC}); err != nil {
			t.Errorf("levels %v: %v", tc.levels, err)
		}
		md, _ := os.ReadFile(path)
		if got := strings.Contains(string(md), "throughput-tpot"); got != tc.chart {
			t.Errorf("levels %v: chart linked %v, want %v", tc.levels, got, tc.chart)
		}
	}
}

package phases

import "testing"

// TestSeriesKeepsTheNewest: a level longer than MaxSeries seconds keeps
// its newest seconds, every list the same length.
func TestSeriesKeepsTheNewest(t *testing.T) {
	var s MacroSeries
	for i := range MaxSeries + 10 {
		s.Add(MacroTick{TPOTp50ms: float64(i)}, float64(i), 1)
	}
	if s.Len() != MaxSeries || len(s.Waiting) != MaxSeries || s.TPOTp50ms[0] != 10 || s.Running[MaxSeries-1] != MaxSeries+9 {
		t.Fatalf("len %d, first %v, last %v", s.Len(), s.TPOTp50ms[0], s.Running[MaxSeries-1])
	}
}

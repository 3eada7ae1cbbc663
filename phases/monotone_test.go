package phases

import (
	"strings"
	"testing"
)

// A level whose p90 came out above its p99 is written p50 ≤ p90 ≤ p99.
func TestMonotonePercentiles(t *testing.T) {
	l := LevelResult{MedianTTFTms: 75.8, P90TTFTms: 78.8, P99TTFTms: 77.0, MedianTPOTms: 12, P90TPOTms: 11, P99TPOTms: 13, MedianITLms: 5}
	l.MonotonePercentiles()
	if l.P99TTFTms != 78.8 || l.P90TTFTms != 78.8 || l.P90TPOTms != 12 || l.P99TPOTms != 13 || l.P90ITLms != 0 {
		t.Errorf("%+v", l)
	}
}

// Power is written one way: the mean of all GPUs together and per GPU,
// then the peak of all together.
func TestPowerText(t *testing.T) {
	g := GPULevel{GPUs: 8, MeanPowerW: 3848, PeakPowerW: 3886, Samples: 3}
	if got := g.PowerText(); got != "3848 W mean total, 481 W per GPU (peak 3886 W total)" {
		t.Errorf("%q", got)
	}
	if got := g.Line(); !strings.HasPrefix(got, "GPU: power 3848 W mean total, 481 W per GPU (peak 3886 W total), SM") {
		t.Errorf("%q", got)
	}
}

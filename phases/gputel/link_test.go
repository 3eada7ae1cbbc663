package gputel

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim"
)

func TestPCIePeak(t *testing.T) {
	l, ok := pciePeak("0, 5, 16\n1, 5, 16\n")
	if !ok || l.Kind != "PCIe" || math.Abs(l.PeakGB-63.015) > 0.01 {
		t.Fatalf("gen5 x16: %+v %v", l, ok)
	}
	if l, ok = pciePeak("0, 4, 8\n"); !ok || math.Abs(l.PeakGB-15.75) > 0.01 {
		t.Fatalf("gen4 x8: %+v", l)
	}
	if _, ok = pciePeak("0, [N/A], 16\n0, 9, 16\n"); ok {
		t.Fatal("no generation read, yet a peak")
	}
}

// The simulated H200s have 18 NVLink links; PCIe-only ones Gen5 x16.
func TestLinkPeakOnSim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []struct {
		opt  sim.Options
		kind string
		peak float64
	}{{sim.Options{}, "NVLink", 478.116}, {sim.Options{NoNVLink: true, GPUs: 2}, "PCIe", 63.015}} {
		d, err := sim.Start(ctx, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := LinkPeak(ctx, d)
		d.Close()
		if !ok || l.Kind != c.kind || math.Abs(l.PeakGB-c.peak) > 0.01 {
			t.Errorf("%+v: got %+v %v", c.opt, l, ok)
		}
	}
}

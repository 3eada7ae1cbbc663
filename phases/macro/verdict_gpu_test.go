package macro_test

import (
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// gpuLevels is a plateau at C=2 (C=4 adds 5%) with these GPU figures at
// C=1, 2 and 4, and the server's /metrics read.
func gpuLevels(gs ...*phases.GPULevel) []phases.LevelResult {
	var out []phases.LevelResult
	for i, g := range gs {
		out = append(out, phases.LevelResult{Concurrency: 1 << i, Completed: 10, OutputThroughput: []float64{100, 180, 189}[i],
			MedianTPOTms: 10, GPU: g, Server: &phases.ServerLevel{Available: true, MaxRunning: float64(int(1) << i)}})
	}
	return out
}

func gpu(clock, pviol, tviol float64, throttle string) *phases.GPULevel {
	return &phases.GPULevel{Source: "nvidia-smi dmon", GPUs: 8, Samples: 5, MeanPowerW: 5400, PeakPowerW: 5600,
		MeanSMClockMHz: clock, MinSMClockMHz: clock - 100, PowerThrottlePct: pviol, ThermalThrottlePct: tviol, Throttle: throttle}
}

// A plateau whose next level ran at the power cap is named power_throttled;
// one whose clocks fell, clock_throttled; GPUs running free leave the
// server's verdict alone.
func TestVerdictGPUThrottled(t *testing.T) {
	reason, ev := macro.Explain(gpuLevels(gpu(1980, 0, 0, ""), gpu(1980, 2, 0, ""), gpu(1700, 41, 0, "power")), 1, macro.Limits{})
	wantVerdict(t, &phases.Plateau{Reason: reason, Evidence: ev}, macro.LimitPower, "plateau at C=2", "power cap 41% of the time at C=4", "5400 W mean")
	reason, ev = macro.Explain(gpuLevels(gpu(1980, 0, 0, ""), gpu(1980, 0, 0, ""), gpu(1500, 0, 12, "thermal")), 1, macro.Limits{})
	wantVerdict(t, &phases.Plateau{Reason: reason, Evidence: ev}, macro.LimitClock, "1500 MHz at C=4 from 1980 MHz", "thermal violations 12%")
	reason, ev = macro.Explain(gpuLevels(gpu(1980, 0, 0, ""), gpu(1975, 0, 0, ""), gpu(1970, 1, 0, "")), 1, macro.Limits{})
	if reason == macro.LimitPower || reason == macro.LimitClock {
		t.Fatalf("free-running GPUs named %s: %s", reason, ev)
	}
	reason, _ = macro.Explain(gpuLevels(nil, nil, nil), 1, macro.Limits{})
	if reason == macro.LimitPower || reason == macro.LimitClock {
		t.Fatalf("no GPU figures named %s", reason)
	}
}

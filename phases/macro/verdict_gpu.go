package macro

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// clockDrop is how far below the sweep's highest level-mean SM clock a
// level's mean may fall before its clocks are said to be held down.
const clockDrop = 0.90

// gpuVerdict names a plateau the GPUs limited: held at their power cap
// (power_throttled), or their SM clocks down from what the sweep's other
// levels ran at (clock_throttled, thermal or otherwise). It reads the level
// above the plateau first, then the plateau's own.
func gpuVerdict(levels []phases.LevelResult, at phases.LevelResult, next *phases.LevelResult) (reason, evidence string, ok bool) {
	best, bestC := 0.0, 0
	for _, l := range levels {
		if g := l.GPU; g != nil && g.Samples > 0 && g.MeanSMClockMHz > best {
			best, bestC = g.MeanSMClockMHz, l.Concurrency
		}
	}
	for _, l := range []*phases.LevelResult{next, &at} {
		if l == nil || l.GPU == nil || l.GPU.Samples == 0 {
			continue
		}
		g := l.GPU
		if g.Throttle == "power" || g.Throttle == "power+thermal" {
			return LimitPower, fmt.Sprintf("the GPUs were held at their power cap %.0f%% of the time at C=%d (%.0f W mean, peak %.0f W, %s; "+
				"SM clock %.0f MHz, min %.0f) (power_throttled) — the power limit, not the server, caps throughput: "+
				"check the cap (nvidia-smi -q -d POWER), cooling and the PSU", g.PowerThrottlePct, l.Concurrency, g.MeanPowerW,
				g.PeakPowerW, gpus(g.GPUs), g.MeanSMClockMHz, g.MinSMClockMHz), true
		}
		if best > 0 && g.MeanSMClockMHz < clockDrop*best {
			return LimitClock, fmt.Sprintf("the SM clock fell to %.0f MHz at C=%d from %.0f MHz at C=%d (thermal violations %.0f%% of the time) "+
				"(clock_throttled) — the GPUs slowed down: check temperatures and cooling (nvidia-smi -q -d PERFORMANCE)",
				g.MeanSMClockMHz, l.Concurrency, best, bestC, g.ThermalThrottlePct), true
		}
		if g.Throttle == "thermal" {
			return LimitClock, fmt.Sprintf("the GPUs were held down by temperature %.0f%% of the time at C=%d (SM clock %.0f MHz, min %.0f) "+
				"(clock_throttled) — check temperatures and cooling", g.ThermalThrottlePct, l.Concurrency, g.MeanSMClockMHz, g.MinSMClockMHz), true
		}
	}
	return "", "", false
}

func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("all %d GPUs", n)
}

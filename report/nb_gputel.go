package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// gpuLevels writes the GPUs per level (when a sampler ran): a table of
// power, utilisation, clocks, throttling, energy per output token and link
// traffic, what the sampler read and lacked, and a chart against the
// levels.
func (n *nb) gpuLevels(levels []phases.LevelResult, srcs []phases.GPUTelSource, tag string) {
	var with []phases.LevelResult
	for _, l := range levels {
		if l.GPU != nil && l.GPU.Samples > 0 && !l.GPU.NoReadings {
			with = append(with, l)
		}
	}
	if len(srcs) > 0 {
		s := srcs[len(srcs)-1]
		if s.Source == "" {
			n.p("GPU telemetry: none (%s).\n\n", strings.Join(s.Notes, "; "))
		} else {
			notes := strings.Join(s.Notes, "; ")
			if notes != "" {
				notes = " " + strings.ToUpper(notes[:1]) + notes[1:] + "."
			}
			gpus := fmt.Sprintf("%d GPUs", s.GPUs)
			if s.GPUs == 1 {
				gpus = "1 GPU"
			}
			n.p("GPU telemetry: `%s` on %s, %s, once a second.%s\n\n", s.Command, s.Host, gpus, notes)
		}
	}
	if len(with) == 0 {
		return
	}
	n.ln("| C | power (mean) | power W peak, total | SM util | SM clock MHz (min) | throttled | J / output token | NVLink GB/s | PCIe GB/s |")
	n.ln("|---:|---:|---:|---:|---:|---|---:|---:|---:|")
	for _, l := range with {
		g := l.GPU
		thr := "no"
		if g.Throttle != "" {
			thr = fmt.Sprintf("%s (%.0f%% / %.0f%%)", g.Throttle, g.PowerThrottlePct, g.ThermalThrottlePct)
		}
		n.p("| %d | %s | %.0f | %.0f%% (peak %.0f%%) | %.0f (%.0f) | %s | %s | %s | %s |\n", l.Concurrency, phases.PowerMean(g.MeanPowerW, g.GPUs), g.PeakPowerW,
			g.MeanUtilPct, g.PeakUtilPct, g.MeanSMClockMHz, g.MinSMClockMHz, thr, jpt(g.JPerOutputToken), gbs(g.NVLinkGBs), gbs(g.PCIeGBs))
	}
	n.ln("")
	n.ln("Power is the mean of all GPUs together (and per GPU), over each level's throughput window; energy per output token is that window's energy over the output tokens received in it (J = mean power × window / tokens). Throttled: the share of time the clocks were held down by power / by temperature.\n")
	if cl := chartLevels(with); len(cl) > 1 {
		if link := n.addChart(tag+"-gpu."+n.chartExt(), "GPU power and energy per output token vs concurrency", func() ([]byte, error) { return gpuChart(cl, n.chartExt()) }); link != "" {
			n.ln(link + "\n")
		}
	}
}

func jpt(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.3g", v)
}

func gbs(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.3g", *v)
}

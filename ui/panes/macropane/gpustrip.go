package macropane

import (
	"fmt"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// gpuStrip is the GPUs on the sweep's time axis: power (all GPUs), SM
// utilisation (their mean) and link traffic (NVLink where measured, else
// PCIe; all GPUs), one line each, sampled at each tick like the charts
// above so a column is the same second in every line.
type gpuStrip struct {
	src               *phases.GPUTelSource
	last              phases.GPUTelSample
	have              bool
	power, util, link ring
	charts            [3]*chart
}

// stripRows is how many lines the strip takes: three when the sampler
// reads the GPUs, one when it said why it cannot, none before it spoke.
func (g *gpuStrip) rows() int {
	switch {
	case g.src == nil:
		return 0
	case g.src.Source == "":
		return 1
	}
	return 3
}

// sample pushes the latest round's figures at a tick (zeros when the
// latest round is older than a few seconds).
func (g *gpuStrip) sample(at time.Time) {
	var p, u, l float64
	if g.have && at.Sub(g.last.At) < 3*time.Second {
		p, u, l = roundFigures(g.last, g.nvlink())
	}
	g.power.push(p)
	g.util.push(u)
	g.link.push(l)
}

func (g *gpuStrip) nvlink() bool { return g.src != nil && g.src.NVLink }

// roundFigures are one round's power (sum), SM utilisation (mean) and link
// traffic (sum of receive and transmit: NVLink, or PCIe without it).
func roundFigures(s phases.GPUTelSample, nvlink bool) (power, util, link float64) {
	n := 0
	add := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	for _, g := range s.GPUs {
		power += add(g.PowerW)
		if g.UtilPct != nil {
			util += *g.UtilPct
			n++
		}
		if nvlink {
			link += add(g.NVLinkRxGBs) + add(g.NVLinkTxGBs)
		} else {
			link += add(g.PCIeRxGBs) + add(g.PCIeTxGBs)
		}
	}
	if n > 0 {
		util /= float64(n)
	}
	return power, util, link
}

// writeGPUStrip writes the strip's lines, each label in the charts' label
// column and its sparkline under the charts' seconds.
func (m *Model) writeGPUStrip(b *strings.Builder, l layout) {
	g := &m.gpu
	s := m.d.Styles
	if g.rows() == 0 || l.strip == 0 {
		return
	}
	if g.src.Source == "" {
		b.WriteByte('\n')
		b.WriteString(s.Subtle.Render(components.Fit("GPU — "+strings.Join(g.src.Notes, "; "), m.w)))
		return
	}
	linkName := "PCIe"
	if g.nvlink() {
		linkName = "NVLink"
	}
	p, u, k := g.power.lastSet(), g.util.lastSet(), g.link.lastSet()
	// Each line spans its window's lowest to highest second (▼ … ▲).
	span := func(c *chart, f func(float64) string) string {
		return "▼" + f(minAbove0(c.main.last(c.w))) + " ▲" + f(c.top)
	}
	// The power line is the current second's, all GPUs together; its span
	// only where the label column holds it whole.
	power := fmt.Sprintf("GPUs now %sW", watts(p))
	if full := power + " " + span(g.charts[0], watts); len([]rune(full)) <= l.labelW {
		power = full
	}
	labels := [3]string{
		power,
		fmt.Sprintf("SM %s%% %s", units.Rate(u), span(g.charts[1], topLabel)),
		fmt.Sprintf("%s %s GB/s", linkName, units.Rate(k)),
	}
	for i := range l.strip {
		b.WriteByte('\n')
		b.WriteString(s.Subtle.Render(components.Fit(labels[i], l.labelW)))
		b.WriteByte(' ')
		b.WriteString(g.charts[i].view)
	}
}

// watts writes a power compactly: "692", "4.9k".
func watts(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

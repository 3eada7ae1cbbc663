package macropane

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/ui/components"
)

// verdictLines are the plateau's banner: where it is, why (the verdict's
// evidence), the largest concurrency meeting the SLO and the noise, on at
// most two lines.
func (m *Model) verdictLines(p *phases.Plateau) []string {
	s := m.d.Styles
	head := fmt.Sprintf("plateau at C=%d: %s tok/s", p.Concurrency, units.Thousands(p.OutputThroughput))
	if p.Reason == "" {
		text := head + " — doubling C adds <10%"
		if m.slo != nil {
			text += "; " + m.slo.Text
		}
		return []string{s.Good.Render(components.Fit(text, m.w))}
	}
	q := *p
	if m.slo != nil && q.SLO == "" {
		q.SLO = m.slo.Text
	}
	why := strings.TrimPrefix(macro.VerdictLine(&q), fmt.Sprintf("plateau at C=%d: ", p.Concurrency))
	lines := components.Wrap(head+" — "+p.Reason+": "+why, m.w)
	if len(lines) > 2 {
		lines = lines[:2]
		lines[1] = components.Fit(lines[1]+" …", m.w)
	}
	for i, l := range lines {
		lines[i] = s.Good.Render(components.Fit(l, m.w))
	}
	return lines
}

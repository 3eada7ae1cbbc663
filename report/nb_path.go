package report

import (
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// pathLines say how the load reached the server, its round trip and how
// bunched the levels arrived, and what that did to the figures, with the
// fix.
func (n *nb) pathLines(p *phases.MacroPath, levels []phases.LevelResult) {
	if p == nil {
		return
	}
	n.p("**Path:** %s\n", strings.TrimPrefix(macro.PathLine(*p, levels), "path: "))
	n.ln("")
	warns := append([]string{}, p.Warnings...)
	if w := macro.BunchedSummary(p, levels); w != "" {
		warns = append(warns, w)
	}
	for _, w := range warns {
		n.p("- path warning: %s\n", w)
	}
	if len(warns) > 0 {
		n.ln("")
	}
}

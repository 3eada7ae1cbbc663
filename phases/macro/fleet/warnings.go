package fleet

import (
	"regexp"
	"slices"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// levelNames matches a result warning about levels ("C=1, C=2: …",
// "4 req/s: …"): an agent's names its own shares, not the sweep's levels.
var levelNames = regexp.MustCompile(`^(C=\d+|[0-9.e+]+ req/s)(, (C=\d+|[0-9.e+]+ req/s))*: `)

// sweepWarnings are an agent's result warnings about the whole sweep,
// without those about its own levels.
func sweepWarnings(ws []string) []string {
	return slices.DeleteFunc(slices.Clone(ws), levelNames.MatchString)
}

// withoutFew drops an agent's few-requests warning: the merged level
// counts all agents' requests and says its own.
func withoutFew(ws []string, completed int) []string {
	few := macro.FewRequestsWarning(completed)
	return slices.DeleteFunc(slices.Clone(ws), func(w string) bool { return w == few })
}

// levelWarnings are the result's warnings about the merged levels: each
// level's warnings, named by the level.
func levelWarnings(levels []phases.LevelResult) []string {
	var out []string
	for _, l := range levels {
		name := phases.LevelName(l.Concurrency, l.Rate)
		for _, w := range l.Warnings {
			out = append(out, name+": "+w)
		}
	}
	return out
}

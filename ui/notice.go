package ui

import (
	"strings"

	"github.com/profdeck/profdeck/ui/components"
)

// quickNotice is the status bar's opening notice of the simulated host's
// quick settings (campaign.QuickSim's "macro.requests 16"; nil when none)
// as figures for one row: whole at 120 columns ("host sim quick settings
// (left at default): macro.requests 16, …"), by their keys' last part at 80
// ("host sim quick settings: requests 16, …"). The whole sentence,
// campaign.QuickSimNote, is said on stderr.
func quickNotice(set []string) []components.Field {
	if len(set) == 0 {
		return nil
	}
	fields := []components.Field{{Text: "host sim quick settings (left at default):", Short: "host sim quick settings:", Rank: 2}}
	for i, s := range set {
		short := s
		if key, value, ok := strings.Cut(s, " "); ok {
			if j := strings.LastIndex(key, "."); j >= 0 {
				short = key[j+1:] + " " + value
			}
		}
		if i < len(set)-1 {
			s, short = s+",", short+","
		}
		fields = append(fields, components.Field{Text: s, Short: short, Rank: 1})
	}
	return fields
}

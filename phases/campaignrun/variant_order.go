package campaignrun

import (
	"maps"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// variantKey is what a variant serves: its whole launch line and its
// environment. Two variants with the same key are one server.
func variantKey(baselineLaunch string, v phases.VariantSpec) string {
	key := phases.VariantLaunch(baselineLaunch, v)
	for _, k := range slices.Sorted(maps.Keys(v.Env)) {
		key += "\x00" + k + "=" + v.Env[k]
	}
	return key
}

// OrderVariants is the order that needs the fewest loads: the file's,
// each variant that serves the same launch and environment as an earlier
// one brought next to it, so one load serves them all. Every other
// variant is a server of its own and needs its own load in any order;
// the baseline's server is not shared (it runs with the profiler, and is
// left as run.leave_server asks).
func OrderVariants(baselineLaunch string, vs []phases.VariantSpec) []phases.VariantSpec {
	var keys []string
	by := map[string][]phases.VariantSpec{}
	for _, v := range vs {
		k := variantKey(baselineLaunch, v)
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], v)
	}
	out := make([]phases.VariantSpec, 0, len(vs))
	for _, k := range keys {
		out = append(out, by[k]...)
	}
	return out
}

// SharesLoad reports whether v is served by the load of prev, the
// variant served just before it: the same launch and environment.
func SharesLoad(baselineLaunch string, prev *phases.VariantSpec, v phases.VariantSpec) bool {
	return prev != nil && variantKey(baselineLaunch, *prev) == variantKey(baselineLaunch, v)
}

// VariantLoads is the loads that serving vs in the order OrderVariants
// gives takes: one per distinct launch and environment.
func VariantLoads(baselineLaunch string, vs []phases.VariantSpec) int {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[variantKey(baselineLaunch, v)] = true
	}
	return len(seen)
}

// sharedReason is the reason of a load a variant shares.
func sharedReason(prev string) string {
	return "already serving: the same launch and environment as " + strings.TrimSpace(prev)
}

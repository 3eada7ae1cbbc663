package phases

import "strings"

// VariantLaunch is the launch line a variant serves: its own Launch when
// given, else the baseline's launch with the variant's Args added, each
// flag of Args replacing the same flag there (with its values, in either
// the "--flag value" or the "--flag=value" form).
func VariantLaunch(baseline string, spec VariantSpec) string {
	if spec.Launch != "" {
		return spec.Launch
	}
	add := strings.Fields(strings.Join(spec.Args, " "))
	if len(add) == 0 {
		return baseline
	}
	drop := map[string]bool{}
	for _, f := range add {
		if strings.HasPrefix(f, "--") {
			name, _, _ := strings.Cut(f, "=")
			drop[name] = true
		}
	}
	kept := withoutFlags(strings.Fields(baseline), drop)
	return strings.Join(append(kept, add...), " ")
}

// withoutFlags drops each flag named in drop and the values after it.
func withoutFlags(words []string, drop map[string]bool) []string {
	var kept []string
	skipping := false
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			name, _, _ := strings.Cut(w, "=")
			skipping = drop[name]
		}
		if !skipping {
			kept = append(kept, w)
		}
	}
	return kept
}

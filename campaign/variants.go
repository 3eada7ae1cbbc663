package campaign

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// Variant is one named change to the server that a campaign compares
// against its baseline (server.launch): Args are flags added to the
// baseline's launch, each replacing the same flag there ("--max-num-seqs
// 256" replaces "--max-num-seqs 128"); Launch is a whole launch line
// instead; Env adds environment variables. Matrix gives one variant per
// value (per combination of values, for several flags), named after the
// flag and the value, e.g. {--max-num-seqs: [64, 256]}.
type Variant struct {
	Name   string              `yaml:"name"`
	Args   []string            `yaml:"args"`
	Launch string              `yaml:"launch"`
	Env    map[string]string   `yaml:"env"`
	Matrix map[string][]string `yaml:"matrix"`
}

var variantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// VariantSpecs are the campaign's variants, each matrix expanded, in the
// file's order.
func (c *Campaign) VariantSpecs() []phases.VariantSpec {
	var out []phases.VariantSpec
	for _, v := range c.Variants {
		if len(v.Matrix) == 0 {
			out = append(out, phases.VariantSpec{Name: v.Name, Args: v.Args, Launch: v.Launch, Env: v.Env})
			continue
		}
		for _, args := range matrixArgs(v.Matrix) {
			out = append(out, phases.VariantSpec{Name: matrixName(v.Name, args), Args: append(append([]string{}, v.Args...), args...), Env: v.Env})
		}
	}
	return out
}

// matrixArgs is every combination of the matrix's values, flags in name
// order, each as "--flag value".
func matrixArgs(m map[string][]string) [][]string {
	flags := make([]string, 0, len(m))
	for f := range m {
		flags = append(flags, f)
	}
	sort.Strings(flags)
	combos := [][]string{nil}
	for _, f := range flags {
		var next [][]string
		for _, c := range combos {
			for _, v := range m[f] {
				next = append(next, append(append([]string{}, c...), f+" "+v))
			}
		}
		combos = next
	}
	return combos
}

// matrixName names one combination: the prefix (if any) and each flag
// without its dashes with its value, e.g. "max-num-seqs-64".
func matrixName(prefix string, args []string) string {
	parts := []string{}
	if prefix != "" {
		parts = append(parts, prefix)
	}
	for _, a := range args {
		f, v, _ := strings.Cut(a, " ")
		parts = append(parts, strings.TrimLeft(f, "-")+"-"+v)
	}
	return strings.Join(parts, "-")
}

// validateVariants checks each variant on its own, then the names of all
// of them once expanded.
func (c *Campaign) validateVariants() []error {
	var errs []error
	for i, v := range c.Variants {
		errs = append(errs, v.validate(fmt.Sprintf("variants[%d]", i))...)
	}
	if len(errs) > 0 {
		return errs
	}
	if len(c.Variants) > 0 && c.Server.Launch == "" && anyArgs(c.Variants) {
		errs = append(errs, bad("variants", "a variant with args needs server.launch (the baseline's launch) to add them to"))
	}
	seen := map[string]bool{}
	for _, s := range c.VariantSpecs() {
		if seen[s.Name] {
			errs = append(errs, bad("variants", "two variants are named %q: each needs its own name", s.Name))
		}
		seen[s.Name] = true
	}
	return errs
}

func anyArgs(vs []Variant) bool {
	for _, v := range vs {
		if len(v.Args) > 0 || len(v.Matrix) > 0 {
			return true
		}
	}
	return false
}

// validate checks one variant's name and what it changes.
func (v Variant) validate(key string) []error {
	var errs []error
	switch {
	case v.Name == "" && len(v.Matrix) == 0:
		errs = append(errs, bad(key, "each variant needs a name"))
	case v.Name != "" && !variantName.MatchString(v.Name):
		errs = append(errs, bad(key+".name", "%q: letters, digits, '.', '_' and '-' only", v.Name))
	case v.Name == phases.Baseline:
		errs = append(errs, bad(key+".name", "%q is the campaign's own launch: name the variant otherwise", v.Name))
	}
	if v.Launch != "" && (len(v.Args) > 0 || len(v.Matrix) > 0) {
		errs = append(errs, bad(key+".launch", "a whole launch line goes without args or matrix (they change the baseline's launch)"))
	}
	if v.Launch == "" && len(v.Args) == 0 && len(v.Env) == 0 && len(v.Matrix) == 0 {
		errs = append(errs, bad(key, "changes nothing: give args, launch, env or matrix"))
	}
	errs = append(errs, validateArgs(key+".args", v.Args)...)
	return append(errs, validateMatrix(key+".matrix", v.Matrix)...)
}

// validateArgs wants the args to start with a flag.
func validateArgs(key string, args []string) []error {
	words := strings.Fields(strings.Join(args, " "))
	if len(words) > 0 && !strings.HasPrefix(words[0], "--") {
		return []error{bad(key, "%q: args are flags added to the baseline's launch, starting with --", words[0])}
	}
	return nil
}

// validateMatrix wants flags with at least one value each.
func validateMatrix(key string, m map[string][]string) []error {
	var errs []error
	flags := make([]string, 0, len(m))
	for f := range m {
		flags = append(flags, f)
	}
	sort.Strings(flags)
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") || strings.ContainsAny(f, " =") {
			errs = append(errs, bad(key, "%q: each key is one flag, e.g. --max-num-seqs", f))
		} else if len(m[f]) == 0 {
			errs = append(errs, bad(key, "%s: give at least one value", f))
		}
	}
	return errs
}

package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// launchFlags are a launch line's --flags, by name (lower case, "_" as
// "-"), each with its value ("" for a flag without one).
type launchFlags map[string]string

// boolFlags take no value: the token after them is the next argument.
var boolFlags = map[string]bool{
	"enable-chunked-prefill": true, "no-enable-chunked-prefill": true, "chunked-prefill": true,
	"enable-expert-parallel": true, "no-enable-expert-parallel": true, "enforce-eager": true,
	"enable-prefix-caching": true, "no-enable-prefix-caching": true, "trust-remote-code": true,
	"disable-log-requests": true, "disable-log-stats": true, "enable-log-requests": true,
}

// splitLaunch splits a launch line into words as a shell would, single
// and double quotes kept together (without the quotes), backslash escapes
// outside single quotes. It never fails: an unclosed quote runs to the end.
func splitLaunch(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote, esc := false, rune(0), false
	for _, r := range line {
		switch {
		case esc:
			cur.WriteRune(r)
			esc, in = false, true
		case r == '\\' && quote != '\'':
			esc = true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// flagName is a flag's name as compared: without its dashes, lower case,
// "_" as "-"; ok false for a word that is not a --flag.
func flagName(word string) (name, value string, hasValue, ok bool) {
	if !strings.HasPrefix(word, "--") || len(word) < 3 {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(word[2:], "=")
	return strings.ReplaceAll(strings.ToLower(name), "_", "-"), value, hasValue, true
}

// parseFlags reads the --flags of a list of words: --name=value, --name
// value (the next word, unless it is a flag or the flag takes none), or
// --name alone.
func parseFlags(words []string) launchFlags {
	f := launchFlags{}
	for i := 0; i < len(words); i++ {
		name, value, has, ok := flagName(words[i])
		if !ok {
			continue
		}
		if !has && !boolFlags[name] && i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") {
			value = words[i+1]
			i++
		}
		f[name] = value
	}
	return f
}

// argWords are a variant's args as words: an arg that holds a flag and
// its value ("--max-num-seqs 64", as a campaign's matrix writes them) is
// split as a shell would; any other arg is one word (a JSON value).
func argWords(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "--") && strings.ContainsAny(a, " \t") {
			out = append(out, splitLaunch(a)...)
			continue
		}
		out = append(out, a)
	}
	return out
}

// flagChange is one flag the variant sets otherwise than the baseline:
// Old "" with Had false when the baseline does not set it; Gone when the
// variant's whole launch line drops it.
type flagChange struct {
	Name, Old, New string
	Had, Gone      bool
}

// String is the change in words: "--max-num-seqs 128 → 64".
func (c flagChange) String() string {
	old, nw := c.Old, c.New
	if !c.Had {
		old = "not set"
	} else if old == "" {
		old = "set"
	}
	if c.Gone {
		nw = "not set"
	} else if nw == "" {
		nw = "set"
	}
	return fmt.Sprintf("--%s %s → %s", c.Name, old, nw)
}

// launchChanges are the flags a variant changes against the baseline's
// launch: its args replace the same flags there (or add them), or its
// whole launch line is compared flag by flag. The variant's launch line
// too, as served.
func launchChanges(baseline string, spec phases.VariantSpec) ([]flagChange, launchFlags) {
	base := parseFlags(splitLaunch(baseline))
	next := maps.Clone(base)
	if strings.TrimSpace(spec.Launch) != "" {
		next = parseFlags(splitLaunch(spec.Launch))
	}
	maps.Copy(next, parseFlags(argWords(spec.Args)))
	var out []flagChange
	for name, v := range next {
		if old, had := base[name]; !had || old != v {
			out = append(out, flagChange{Name: name, Old: old, New: v, Had: had})
		}
	}
	for name, old := range base {
		if _, ok := next[name]; !ok {
			out = append(out, flagChange{Name: name, Old: old, Had: true, Gone: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, next
}

// neutralFlags change where and how the server is reached or logs, not
// what it measures.
var neutralFlags = []string{"port", "host", "served-model-name", "api-key", "uvicorn-log-level", "disable-log-requests",
	"disable-log-stats", "enable-log-requests", "profiler-config", "ssl-keyfile", "ssl-certfile", "root-path", "middleware"}

// isNeutral reports whether a flag leaves the figures alone.
func isNeutral(name string) bool { return slices.Contains(neutralFlags, name) }

// envNames are the environment variables a variant sets, sorted.
func envNames(env map[string]string) []string {
	names := slices.Collect(maps.Keys(env))
	sort.Strings(names)
	return names
}

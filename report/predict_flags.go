package report

import (
	"sort"
	"strconv"
	"strings"
)

// launchFlags reads a launch line's --flags: each flag's value ("" for a
// switch), with the short and long spellings vLLM accepts made one.
func launchFlags(launch string) map[string]string {
	out := map[string]string{}
	f := strings.Fields(launch)
	for i := 0; i < len(f); i++ {
		if !strings.HasPrefix(f[i], "-") || len(f[i]) < 2 {
			continue
		}
		name, val, has := strings.Cut(f[i], "=")
		if !has && i+1 < len(f) && !strings.HasPrefix(f[i+1], "-") {
			val = f[i+1]
			i++
		}
		out[flagAlias(name)] = val
	}
	return out
}

func flagAlias(name string) string {
	switch name {
	case "-tp":
		return "--tensor-parallel-size"
	case "-dp":
		return "--data-parallel-size"
	case "--chunked-prefill":
		return "--enable-chunked-prefill"
	}
	return name
}

// flagChanges are the flags a variant's launch sets otherwise than the
// baseline's (added, changed or dropped), sorted.
func flagChanges(base, variant map[string]string) []string {
	var out []string
	for k, v := range variant {
		if bv, ok := base[k]; !ok || bv != v {
			out = append(out, k)
		}
	}
	for k := range base {
		if _, ok := variant[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// flagInt is a flag's integer value, or def when absent or not a number.
func flagInt(flags map[string]string, name string, def int) int {
	if v, err := strconv.Atoi(flags[name]); err == nil && v > 0 {
		return v
	}
	return def
}

// chunkedOn says whether a launch's flags turn chunked prefill on.
func chunkedOn(flags map[string]string) bool {
	if _, off := flags["--no-enable-chunked-prefill"]; off {
		return false
	}
	v, on := flags["--enable-chunked-prefill"]
	return on && v != "false" && v != "False"
}

package model

import (
	"embed"
	"sort"
	"strings"
)

//go:embed presets/*.json
var presetFS embed.FS

// PresetNames lists the built-in models, sorted.
func PresetNames() []string {
	ents, _ := presetFS.ReadDir("presets")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Preset returns a built-in model by name (case-insensitive).
func Preset(name string) (Config, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || strings.ContainsAny(name, "/\\") {
		return Config{}, false
	}
	b, err := presetFS.ReadFile("presets/" + name + ".json")
	if err != nil {
		return Config{}, false
	}
	c, err := Parse(name, b)
	if err != nil {
		panic("model: built-in preset " + name + " does not parse: " + err.Error())
	}
	return c, true
}

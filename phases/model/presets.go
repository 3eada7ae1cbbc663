package model

import (
	"embed"
	"fmt"
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

// presetAliases map a normalised model-name fragment to a preset with the
// same shapes.
var presetAliases = map[string]string{
	"kimik2":      "kimi-k2.5",
	"deepseekr1":  "deepseek-v3",
	"deepseekv31": "deepseek-v3",
}

func normalise(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// PresetFor guesses the preset of a served model from its name, e.g.
// "moonshotai/Kimi-K2.5" or "meta-llama/Llama-3.1-405B-Instruct".
func PresetFor(name string) (string, bool) {
	n := normalise(name)
	if n == "" {
		return "", false
	}
	for _, p := range PresetNames() {
		if strings.Contains(n, normalise(p)) {
			return p, true
		}
	}
	for frag, p := range presetAliases {
		if strings.Contains(n, frag) {
			return p, true
		}
	}
	return "", false
}

// Spec picks the model description a campaign names: its config.json, its
// preset, or a preset guessed from the served model's name.
func Spec(config, preset, name string) (string, error) {
	switch {
	case config != "":
		return config, nil
	case preset != "":
		return preset, nil
	}
	if p, ok := PresetFor(name); ok {
		return p, nil
	}
	return "", fmt.Errorf("no model description: set model.preset (%s) or model.config in the campaign", strings.Join(PresetNames(), ", "))
}

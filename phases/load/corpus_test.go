package load_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
)

// The corpus (testdata/corpus) is real output from public bug reports and
// docs: each sample NAME.txt has NAME.facts.json beside it with its source
// and the facts an operator reads off it by hand. holdout/ was set aside at
// random before the parsers were changed against train/; setaside/ is a
// third of the public logs added later, set aside at random (setaside.json
// names the seed and the list) and scored before the parsers saw them;
// blind/ is ten more gathered after the parsers were changed and scored
// once on them as they were;
// floor.json holds the scores the parsers must keep (raise it when they
// improve).

// corpusSplits are the corpus's parts, scored apart.
var corpusSplits = []string{"train", "holdout", "setaside", "blind"}

// sample is one corpus file and the facts stated for it.
type sample struct {
	name   string
	split  string
	kind   string
	source string
	facts  map[string]any
	text   string
}

func loadCorpus(t *testing.T) []sample {
	t.Helper()
	var out []sample
	for _, split := range corpusSplits {
		files, err := filepath.Glob(filepath.Join("testdata", "corpus", split, "*.facts.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			var meta struct {
				Source string         `json:"source"`
				Kind   string         `json:"kind"`
				Facts  map[string]any `json:"facts"`
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			name := strings.TrimSuffix(f, ".facts.json")
			text, err := os.ReadFile(name + ".txt")
			if err != nil {
				t.Fatalf("%s: no sample beside its facts: %v", f, err)
			}
			if !strings.HasPrefix(meta.Source, "https://") || len(meta.Facts) == 0 {
				t.Fatalf("%s: every sample names its source and states facts", f)
			}
			out = append(out, sample{filepath.Base(name), split, meta.Kind, meta.Source, meta.Facts, string(text)})
		}
	}
	return out
}

// observed is what profdeck reads off a sample, as flat facts.
func observed(t *testing.T, s sample) map[string]any {
	t.Helper()
	var v any
	switch s.kind {
	case "vllm-log", "sglang-log":
		sum, err := enginelog.Read(strings.NewReader(s.text))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		v = sum
	case "nvidia-smi":
		tab := smi.ReadTable(s.text)
		v = map[string]any{"gpus": smi.Parse(s.text, nil), "mig": tab.MIG, "mig_devices": tab.MIGDevices, "processes": tab.Processes}
	case "metrics":
		snap, err := servermetrics.Parse(strings.NewReader(s.text))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		v = servermetrics.FiguresOf(s.name, snap)
	default:
		t.Fatalf("%s: unknown kind %q", s.name, s.kind)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	flatten("", m, out)
	for _, list := range []string{"ranks", "stalls", "mig_devices", "processes"} {
		if l, ok := m[list].([]any); ok {
			out[list] = float64(len(l))
		}
	}
	if gpus, ok := m["gpus"].([]any); ok {
		out["gpus"] = float64(len(gpus))
		for i, g := range gpus {
			if gm, ok := g.(map[string]any); ok {
				flatten(fmt.Sprintf("gpu%d.", i), gm, out)
			}
		}
	}
	if v, ok := m["vllm_version"]; ok {
		out["vllm_version"] = v
	}
	return out
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := prefix + k
		if sub, ok := v.(map[string]any); ok {
			out[key] = sub
			flatten(key+".", sub, out)
			continue
		}
		out[key] = v
	}
}

// agrees says whether the observed value states the fact: numbers within
// 0.5%, lists as sets, null as absent.
func agrees(want, got any) bool {
	if want == nil {
		return got == nil
	}
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && math.Abs(g-w) <= 0.005*math.Abs(w)+1e-9
	case []any:
		g, ok := got.([]any)
		return ok && fmt.Sprint(sortedStrings(w)) == fmt.Sprint(sortedStrings(g))
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

func sortedStrings(list []any) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = fmt.Sprint(v)
	}
	sort.Strings(out)
	return out
}

type score struct{ right, stated, harmful, samples int }

// TestCorpusScore prints, per split, the facts read right of the facts
// stated and the failures read as loading, loaded or ready, and holds the
// parsers to floor.json.
func TestCorpusScore(t *testing.T) {
	scores := map[string]*score{}
	for _, split := range corpusSplits {
		scores[split] = &score{}
	}
	for _, s := range loadCorpus(t) {
		got := observed(t, s)
		sc := scores[s.split]
		sc.samples++
		var missed []string
		for key, want := range s.facts {
			sc.stated++
			if agrees(want, got[key]) {
				sc.right++
			} else {
				missed = append(missed, fmt.Sprintf("%s=%v (read %v)", key, want, got[key]))
			}
		}
		if s.facts["state"] == "failed" && got["state"] != "failed" {
			sc.harmful++
			t.Logf("HARMFUL %s/%s: a failure read as %v", s.split, s.name, got["state"])
		}
		if len(missed) > 0 {
			sort.Strings(missed)
			t.Logf("%s/%s: missed %s", s.split, s.name, strings.Join(missed, "; "))
		}
	}
	var floor map[string]struct {
		Right      int `json:"right"`
		HarmfulMax int `json:"harmful_max"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", "floor.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &floor); err != nil {
		t.Fatal(err)
	}
	for _, split := range corpusSplits {
		sc := scores[split]
		fmt.Printf("corpus %s: %d samples, %d of %d facts read right (%.0f%%), %d failures read as loading or ready\n",
			split, sc.samples, sc.right, sc.stated, 100*float64(sc.right)/float64(max(sc.stated, 1)), sc.harmful)
		f := floor[split]
		if sc.right < f.Right || sc.harmful > f.HarmfulMax {
			t.Errorf("corpus %s: %d right (floor %d), %d harmful (at most %d)", split, sc.right, f.Right, sc.harmful, f.HarmfulMax)
		}
	}
}

package macro

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShareGPTAsVLLMReadsIt: the first turn is the prompt, the second's
// length the output length; a one-turn entry, an entry without
// conversations and a too-short prompt are dropped.
func TestShareGPTAsVLLMReadsIt(t *testing.T) {
	cfg := Config{Dataset: DatasetShareGPT, DatasetFile: "testdata/sharegpt-small.json", Seed: 1}
	ds, err := loadDataset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, it := range ds.items {
		got[it.prompt] = it.outputLen
	}
	want := map[string]int{
		"What is the capital of France and why is it famous?": 18,
		"Write a haiku about GPUs running hot at night.":      13,
	}
	if len(got) != len(want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%q: output %d, want %d", p, got[p], n)
		}
	}
}

func TestJSONLDataset(t *testing.T) {
	ds, err := loadDataset(Config{Dataset: DatasetJSONL, DatasetFile: "testdata/dataset-small.jsonl", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.items) != 2 || ds.items[0].outputLen != 7 || ds.items[1].words != 3 {
		t.Fatalf("%+v", ds.items)
	}
	// The order is seeded: the same seed gives the same order.
	a, _ := loadDataset(Config{Dataset: DatasetJSONL, DatasetFile: "testdata/dataset-small.jsonl", Seed: 9})
	b, _ := loadDataset(Config{Dataset: DatasetJSONL, DatasetFile: "testdata/dataset-small.jsonl", Seed: 9})
	for i := 0; i < 6; i++ {
		if x, y := a.take(), b.take(); x.prompt != y.prompt {
			t.Fatalf("take %d: %q against %q", i, x.prompt, y.prompt)
		}
	}
}

// TestMalformedDatasetNamesFileAndLine: every bad input is one error that
// names the file and the line.
func TestMalformedDatasetNamesFileAndLine(t *testing.T) {
	for _, c := range []struct {
		kind, body, want string
	}{
		{DatasetJSONL, "{\"prompt\": \"a\", \"output_len\": 5}\n{\"prompt\": \"b\", \"output_len\": \n", ":2: not a JSON object"},
		{DatasetJSONL, "{\"prompt\": \"a\", \"output_len\": 5}\n\n{\"output_len\": 5}\n", ":3: no \"prompt\""},
		{DatasetJSONL, "{\"prompt\": \"a\", \"output_len\": 1}\n", ":1: \"output_len\""},
		{DatasetJSONL, "{\"prompt\": \"a\", \"output_len\": 1000000000000}\n", ":1: \"output_len\" must be a whole number from 2 to 1048576"},
		{DatasetJSONL, "[1, 2]\n", ":1: not a JSON object"},
		{DatasetJSONL, "\n\n", "no usable prompt"},
		{DatasetShareGPT, "[\n  {\"conversations\": [\n    {\"value\": \"a\"},\n    {\"value\": oops}\n  ]}\n]\n", ":4: not a ShareGPT JSON list"},
		{DatasetShareGPT, "{\"conversations\": []}\n", ":1: not a ShareGPT JSON list"},
		{DatasetShareGPT, "[\n  {\"conversations\": [\n    {\"value\": \"a\"},\n    {\"value\": 5}\n  ]}\n]\n", ":4: not a ShareGPT JSON list"},
		{DatasetShareGPT, "[\n  {\"conversations\": [{\"value\": \"a b c d e\"}, {\"value\": \"f g h i j\"}]}\n", "not a ShareGPT JSON list"},
		{DatasetShareGPT, "[]", "no usable prompt"},
	} {
		p := writeFile(t, "data."+c.kind, c.body)
		_, err := loadDataset(Config{Dataset: c.kind, DatasetFile: p, Seed: 1})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q naming the file", c.kind, c.body, err, c.want)
		}
	}
	if _, err := loadDataset(Config{Dataset: DatasetJSONL, DatasetFile: "testdata/absent.jsonl"}); err == nil || !strings.Contains(err.Error(), "absent.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := NewSweep(Complete(Config{URL: "http://127.0.0.1:1", Dataset: "csv", DatasetFile: "x"})); err == nil {
		t.Error("an unknown dataset kind accepted")
	}
}

// TestDatasetMaxIsASeededSample: --dataset-max keeps a bounded sample.
func TestDatasetMaxIsASeededSample(t *testing.T) {
	var b strings.Builder
	for i := range 500 {
		b.WriteString(`{"prompt": "p` + strings.Repeat("x", i%7) + ` q", "output_len": 4}` + "\n")
	}
	p := writeFile(t, "big.jsonl", b.String())
	ds, err := loadDataset(Config{Dataset: DatasetJSONL, DatasetFile: p, DatasetMax: 20, Seed: 3})
	if err != nil || len(ds.items) != 20 {
		t.Fatalf("%d items, %v", len(ds.items), err)
	}
}

// TestRangeRatioAsVLLM: lengths uniform over [floor(n(1−r)), ceil(n(1+r))].
func TestRangeRatioAsVLLM(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int]bool{}
	for range 5000 {
		n := spread(rng, 100, 0.2, 1)
		if n < 80 || n > 120 {
			t.Fatalf("length %d outside [80, 120]", n)
		}
		seen[n] = true
	}
	if len(seen) != 41 {
		t.Errorf("%d distinct lengths, want all 41 of [80, 120]", len(seen))
	}
	if spread(rng, 100, 0, 1) != 100 {
		t.Error("ratio 0 changed the length")
	}
	if n := spread(rng, 2, 0.9, 2); n < 2 {
		t.Errorf("output length %d under the floor", n)
	}
	for _, r := range []float64{-0.1, 1, 1.5} {
		if _, err := NewSweep(Complete(Config{URL: "http://127.0.0.1:1", RangeRatio: r})); err == nil {
			t.Errorf("range ratio %g accepted", r)
		}
	}
}

// FuzzDatasets: the readers never panic on any input, and every prompt
// they keep asks for an output length from 2 to MaxOutputLen.
func FuzzDatasets(f *testing.F) {
	for _, s := range []string{`[{"conversations":[{"value":"a b c d"},{"value":"e f g h"}]}]`, "{\"prompt\":\"x\",\"output_len\":3}\n",
		"{\"prompt\":\"x\",\"output_len\":1000000000000000000}\n", "{\"prompt\":\"x\",\"output_len\":-3}\n", "[", "[{", "\x00\xff", `[{"conversations":[{"value":1}]}]`, "{\"prompt\":null}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{DatasetJSONL, DatasetShareGPT} {
			ds := &dataset{rng: rand.New(rand.NewPCG(1, 1))}
			r := strings.NewReader(s)
			if kind == DatasetJSONL {
				_ = ds.readJSONL(r, "f", 10)
			} else {
				_ = ds.readShareGPT(r, "f", 10)
			}
			for _, it := range ds.items {
				if it.outputLen < 2 || it.outputLen > MaxOutputLen {
					t.Fatalf("%s: output length %d kept", kind, it.outputLen)
				}
			}
		}
	})
}

// TestShareGPTEntryBounded: one enormous entry is refused, not read whole.
func TestShareGPTEntryBounded(t *testing.T) {
	body := `[{"conversations": [{"value": "` + strings.Repeat("word ", maxDatasetLine/4) + `"}]}]`
	p := writeFile(t, "huge.json", body)
	_, err := loadDataset(Config{Dataset: DatasetShareGPT, DatasetFile: p, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Fatalf("error %v", err)
	}
}

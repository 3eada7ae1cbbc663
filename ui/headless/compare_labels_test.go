package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/headless"
)

// Three sweeps are labelled A, B and C (in the header and in each table),
// and compare opens with what differs between them: here the workload and
// the profdeck version, not the model they share.
func TestCompareThreeLabelsAndDifferences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i, in := range []int{256, 1024, 1024} {
		p := filepath.Join(dir, string(rune('a'+i))+".json")
		doc := map[string]any{"url": "http://gpu1:8000", "model": "m", "input_len": in, "output_len": 128,
			"profdeck_version": []string{"1.0", "1.0", "1.1"}[i],
			"levels":           []phases.LevelResult{{Concurrency: 1, Completed: 20, OutputThroughput: float64(100 + i)}}}
		b, _ := json.Marshal(doc)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	code, out, errs := runCLI(t, headless.CompareMain, paths...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"A: " + paths[0], "B: " + paths[1], "C: " + paths[2],
		"differs: workload: A input 256, output 128 tokens; B input 1024, output 128 tokens; C input 1024, output 128 tokens",
		"differs: profdeck: A 1.0; B 1.0; C 1.1",
		"B against A", "C against A", "change = (C − A) / A",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "differs: model") || strings.Count(out, "\nB: ") != 1 {
		t.Errorf("a shared model said to differ, or B labelled twice:\n%s", out)
	}
	if i, j := strings.Index(out, "differs:"), strings.Index(out, "B against A"); i < 0 || i > j {
		t.Errorf("the differences do not open the comparison:\n%s", out)
	}
}

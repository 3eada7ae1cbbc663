package macro_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/memtest"
)

// A JSONL dataset of 150 prompts of 1 MB each is refused once the sample
// passes MaxDatasetBytes, in bounded memory (it was read whole: 400 such
// prompts peaked at 760 MB); --dataset-max makes it fit.
func TestDatasetBytesBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prompts.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	line, _ := json.Marshal(map[string]any{"prompt": strings.Repeat("x ", 500<<10), "output_len": 16})
	for i := 0; i < 150; i++ {
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := memtest.Run(t, 200, func() string {
		cfg := macro.Complete(macro.Config{Dataset: macro.DatasetJSONL, DatasetFile: p, Seed: 1})
		err := macro.LoadWorkload(&cfg)
		if err == nil {
			return "accepted"
		}
		return err.Error()
	})
	if !strings.Contains(got, "prompts.jsonl:66: the 66 prompts") || !strings.Contains(got, "over 64 MiB: sample fewer with --dataset-max") {
		t.Fatalf("got %q", got)
	}
	cfg := macro.Complete(macro.Config{Dataset: macro.DatasetJSONL, DatasetFile: p, DatasetMax: 40, Seed: 1})
	if err := macro.LoadWorkload(&cfg); err != nil {
		t.Fatalf("--dataset-max 40: %v", err)
	}
}

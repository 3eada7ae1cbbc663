package macro_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// TestVerdictSeatsUnderWholePrefills: the rig on one H200 (separate
// prefill, --max-num-seqs 128). At C=256 128 ran at most and 255 waited,
// but whole prefills between the decode steps kept fewer than 128 running
// in 60% of the scrapes: the plateau at C=128 is still max_num_seqs. The
// same rig capped at 64 gives it too.
func TestVerdictSeatsUnderWholePrefills(t *testing.T) {
	for run, want := range map[string]string{"separate": "128 of 128 sequences running", "cap64": "64 of 64 sequences running"} {
		levels := h200Levels(t, run)
		seats := 128
		if run == "cap64" {
			seats = 64
		}
		i := 3 // C=128
		reason, ev := macro.Explain(levels, i, macro.Limits{MaxNumSeqs: seats, Source: "the launch command", Looked: true})
		if reason != macro.LimitMaxSeqs || !strings.Contains(ev, want) {
			t.Errorf("%s: %s: %s", run, reason, ev)
		}
	}
}

func h200Levels(t *testing.T, run string) []phases.LevelResult {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "scripts", "fieldrig", "testdata", "h200-tp1-variants", run, "fieldrig.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []phases.LevelResult
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Kind != phases.KindMacroLevel {
			continue
		}
		var l phases.LevelResult
		if err := json.Unmarshal(ev.Data, &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	if len(out) != 5 || out[3].Concurrency != 128 {
		t.Fatalf("%s: %d levels", run, len(out))
	}
	return out
}

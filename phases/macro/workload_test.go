package macro_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestDatasetRequests: a JSONL dataset's prompts and output lengths reach
// the server, with a shared prefix, and the result records the workload.
func TestDatasetRequests(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * 1e6, StepPerSeq: 1, PrefillPerToken: 1})
	var jsonl bytes.Buffer
	res := runSweep(t, macro.Config{URL: url, Concurrency: []int{2}, Requests: 8, Seed: 11, Dataset: macro.DatasetJSONL,
		DatasetFile: "testdata/dataset-small.jsonl", PrefixLen: 4, JSONL: &jsonl})
	w := res.Workload
	if w.Dataset != macro.DatasetJSONL || w.Items != 2 || w.Seed != 11 || w.PrefixLen != 4 || !strings.HasSuffix(w.File, "dataset-small.jsonl") {
		t.Errorf("workload %+v", w)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
		var r macro.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		n++
		// "one two three four five" asks 7 tokens, "six seven eight" 3;
		// each prompt has the 4 prefix tokens before it.
		switch {
		case r.OutputTokens == 7 && r.InputTokens == 5+4, r.OutputTokens == 3 && r.InputTokens == 3+4:
		default:
			t.Errorf("request %d: %d in, %d out", r.Index, r.InputTokens, r.OutputTokens)
		}
	}
	if n < 8 {
		t.Errorf("%d records", n)
	}
	// Lengths that vary are not judged against --output-len.
	for _, x := range res.Warnings {
		if strings.Contains(x, "output length not honoured") {
			t.Errorf("warning %q", x)
		}
	}
}

// TestRangeRatioRequests: random lengths spread as asked, seeded.
func TestRangeRatioRequests(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 1e6, StepPerSeq: 1, PrefillPerToken: 1})
	var jsonl bytes.Buffer
	runSweep(t, macro.Config{URL: url, Concurrency: []int{4}, Requests: 40, InputLen: 20, OutputLen: 10, RangeRatio: 0.5, Seed: 5, JSONL: &jsonl})
	outs := map[int]bool{}
	for _, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
		var r macro.Record
		_ = json.Unmarshal([]byte(l), &r)
		if r.OutputTokens < 5 || r.OutputTokens > 15 {
			t.Errorf("output %d outside [5, 15]", r.OutputTokens)
		}
		outs[r.OutputTokens] = true
	}
	if len(outs) < 4 {
		t.Errorf("output lengths %v: not spread", outs)
	}
}

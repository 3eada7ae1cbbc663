package headless

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// A level's warnings follow its line on the run's stderr, and each
// distinct error is printed once, with what the server said.
func TestProgressLineWarningsAndErrors(t *testing.T) {
	seen := map[string]bool{}
	lv := phases.LevelResult{Concurrency: 8, Completed: 4, Failed: 2, Failures: map[string]int{"http_400": 2},
		Warnings:        []string{"output length not honoured"},
		FailureExamples: []phases.FailureExample{{Kind: "http_400", Status: 400, Body: `{"message":"maximum context length"}`, Count: 2}}}
	first := progressLine(phases.Event{Data: lv}, seen)
	second := progressLine(phases.Event{Data: lv}, seen)
	if !strings.Contains(first, "warning: output length not honoured") || !strings.Contains(first, `error: http_400 ×2: {"message":"maximum context length"}`) {
		t.Errorf("first level:\n%s", first)
	}
	if strings.Contains(second, "error:") || !strings.Contains(second, "warning:") {
		t.Errorf("second level repeats the error or lost its warning:\n%s", second)
	}
	if w := progressLine(phases.Event{Data: phases.MacroWarning{Text: "no /tokenize"}}, seen); w != "  warning: no /tokenize" {
		t.Errorf("sweep warning %q", w)
	}
	if w := progressLine(phases.Event{Data: phases.NCCLWarning{M: 8, Text: "between GEMMs: no figure"}}, seen); w != "  nccl warning: between GEMMs: no figure" {
		t.Errorf("nccl warning %q", w)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// The notebook's sweep says how the load reached the server, its round
// trip and how bunched the levels arrived, and what that did to the
// figures with the fix.
func TestNotebookPath(t *testing.T) {
	path := phases.MacroPath{Kind: phases.PathSSH, Via: "gpu1 (10.0.0.5:22)", Nodelay: "pty", Probe: "GET /health", Probes: 10,
		RTTp50ms: 23.4, RTTp99ms: 25.1, Warnings: []string{"the path to the server (SSH via gpu1 (10.0.0.5:22)) adds 23.4 ms to every request"}}
	md := string(render(t, budgetEvents(
		phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro"},
		phases.KindMacroPath, path,
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 4, Completed: 8, EventsPerRead: 1.01},
		phases.KindMacroLevel, phases.LevelResult{Concurrency: 32, Completed: 64, EventsPerRead: 1.9},
		phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: "macro"})))
	for _, want := range []string{
		"**Path:** SSH via gpu1 (10.0.0.5:22), sends at once: yes · round trip p50 23.40 ms, p99 25.10 ms (GET /health ×10) · token events per read ≤ 1.90 (C=32)",
		"- path warning: the path to the server (SSH via gpu1 (10.0.0.5:22)) adds 23.4 ms",
		"- path warning: C=32: the streams arrived bunched (up to 1.90 token events per read",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}

func render(t *testing.T, evs []phases.Event) []byte {
	t.Helper()
	md, err := RenderNotebook(evs, goldenOpts())
	if err != nil {
		t.Fatal(err)
	}
	return md
}

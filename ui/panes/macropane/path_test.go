package macropane

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// The title says how the load reaches the server and its round trip; a
// path that bends the figures gets its own line with the fix, apart from
// the other warnings.
func TestPathShown(t *testing.T) {
	m := newPane(t, 80, 24, false)
	replay(m, loadEvents(t), -1)
	path := phases.MacroPath{Kind: phases.PathSSH, Via: "gpu1 (10.0.0.5:22)", Nodelay: "pty", Probe: "GET /health", Probes: 10, RTTp50ms: 0.42, RTTp99ms: 0.9}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroPath, path)}})
	v := plain(m)
	if !strings.Contains(v, "via SSH · rtt 0.42 ms") || strings.Contains(v, "path:") {
		t.Errorf("a path with nothing to say:\n%s", v)
	}
	bunched := "the streams arrived bunched (2.40 token events per read, about 1 expected), so ITL reads low and TTFT high: " +
		"the SSH path (gpu1 (10.0.0.5:22)) or this client held them back; --loadgen host (campaign: macro.loadgen: host) runs the load on the GPU host and measures without it"
	lv := phases.LevelResult{Concurrency: 4, Completed: 8, EventsPerRead: 2.4, Warnings: []string{bunched, "input tokens estimated"}}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroLevel, lv)}})
	v = plain(m)
	for _, want := range []string{"path: C=4: the streams arrived bunched (up to 2.40", "latest: C=4: input tokens estimated"} {
		if !strings.Contains(v, want) {
			t.Errorf("no %q in:\n%s", want, v)
		}
	}
	panetest.Fits(t, m.View(), 80, 24)

	// Said before the first level: the round trip.
	m = newPane(t, 100, 30, false)
	path.RTTp50ms, path.Warnings = 23.4, []string{"the path to the server (SSH via gpu1) adds 23.4 ms to every request: every TTFT and E2EL includes it; " +
		"--loadgen host (campaign: macro.loadgen: host) runs the load on the GPU host and measures without it"}
	m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{
		phases.New(clock0, phases.KindMacroPath, path),
		phases.New(clock0, phases.KindMacroWarning, phases.MacroWarning{Text: path.Warnings[0]}),
	}})
	v = plain(m)
	if !strings.Contains(v, "path: the path to the server (SSH via gpu1) adds 23.4 ms") || strings.Contains(v, "warning: the path") {
		t.Errorf("round trip:\n%s", v)
	}
	panetest.Fits(t, m.View(), 100, 30)
}

package report

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// loadsOf counts the loads of each campaign run (by run number): a serve
// or a restart with the profiler that did not find the server already up,
// and a server left as asked by a restart.
func loadsOf(rows []stepRow) map[int]int {
	out := map[int]int{}
	for _, r := range rows {
		if r.state != phases.StepDone && r.state != phases.StepStalled && r.state != phases.StepFailed {
			continue
		}
		switch {
		case (r.name == "serve" || r.name == "profiler_restart") && !strings.HasPrefix(r.reason, "already serving"),
			r.name == "leave_server" && strings.HasPrefix(r.reason, "restarted"):
			out[r.run]++
		default:
			continue
		}
	}
	return out
}

// loadsLine is the line under the steps table: each run's loads.
func loadsLine(rows []stepRow) string {
	loads := loadsOf(rows)
	var parts []string
	last := 0
	for _, r := range rows {
		if r.run != last {
			last = r.run
			parts = append(parts, fmt.Sprintf("run %d: %d", r.run, loads[r.run]))
		}
	}
	return "Loads of the model: " + strings.Join(parts, ", ") + "."
}

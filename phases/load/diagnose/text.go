package diagnose

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// Lines is a diagnosis for people: the verdict, the evidence behind it,
// the processes and ranks, and any hint; at most about a dozen lines.
func Lines(d phases.Diagnosis) []string {
	out := []string{"why: " + d.Verdict}
	for _, w := range d.Why {
		out = append(out, "  · "+w)
	}
	for i, p := range d.Procs {
		if i == 10 {
			out = append(out, fmt.Sprintf("  … %d more processes", len(d.Procs)-i))
			break
		}
		out = append(out, "  "+ProcText(p))
	}
	var behind []string
	for _, r := range d.Ranks {
		if r.Behind {
			behind = append(behind, fmt.Sprintf("rank %d at %s", r.Rank, stageWords[r.Stage]))
		}
	}
	if len(behind) > 0 {
		out = append(out, "  behind: "+strings.Join(behind, ", "))
	}
	for _, h := range d.Hints {
		out = append(out, "  hint: "+h)
	}
	for _, n := range d.Notes {
		out = append(out, "  note: "+n)
	}
	return out
}

// ProcText is one process's line: "pid 4101 VLLM::Worker_TP0 S 0.3% CPU
// 0 B/s read GPU0 30.0 GiB".
func ProcText(p phases.ProcEvidence) string {
	if p.State == "gone" {
		return fmt.Sprintf("pid %d gone", p.PID)
	}
	s := fmt.Sprintf("pid %d %s %s %.0f%% CPU", p.PID, p.Name, p.State, p.CPUPct)
	if p.IOKnown {
		s += " " + rate(p.ReadBps) + " read"
	} else {
		s += " reads unknown"
	}
	if p.GPU >= 0 {
		s += fmt.Sprintf(" GPU%d %.1f GiB", p.GPU, p.GPUMemMiB/1024)
	}
	return s
}

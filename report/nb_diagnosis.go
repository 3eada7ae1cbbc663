package report

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// diagnosisLines is a stall diagnosis in the load's story: the verdict,
// then its evidence, the processes sampled, the ranks behind and any hint.
func diagnosisLines(at string, d phases.Diagnosis) []string {
	on := "on request"
	if d.Trigger == "stall" {
		on = "on the stall"
	}
	out := []string{fmt.Sprintf("- %s **diagnosis** (%s): %s", at, on, mdInline(d.Verdict))}
	for _, w := range d.Why {
		out = append(out, "  - "+mdInline(w))
	}
	for i, p := range d.Procs {
		if i == 16 {
			out = append(out, fmt.Sprintf("  - … %d more processes", len(d.Procs)-i))
			break
		}
		out = append(out, "  - "+procLine(p, d.SampleS))
	}
	for i, r := range d.Ranks {
		if i == 16 {
			out = append(out, fmt.Sprintf("  - … %d more ranks", len(d.Ranks)-i))
			break
		}
		behind := ""
		if r.Behind {
			behind = " **behind**"
		}
		out = append(out, fmt.Sprintf("  - rank %d%s at %s, last line: `%s`", r.Rank, behind, phases.StageLabel(r.Stage), noTicks(r.LastLine)))
	}
	for _, h := range d.Hints {
		out = append(out, "  - hint: "+mdInline(h))
	}
	for _, nt := range d.Notes {
		out = append(out, "  - note: "+mdInline(nt))
	}
	return out
}

func procLine(p phases.ProcEvidence, window float64) string {
	if p.State == "gone" {
		return fmt.Sprintf("pid %d: gone", p.PID)
	}
	s := fmt.Sprintf("pid %d `%s`: state %s, %.0f%% CPU", p.PID, noTicks(p.Name), p.State, p.CPUPct)
	if p.IOKnown {
		s += fmt.Sprintf(", %s/s read over %.0f s", units.Bytes(int64(p.ReadBps)), window)
	}
	if p.GPU >= 0 {
		s += fmt.Sprintf(", GPU %d (%.1f GiB)", p.GPU, p.GPUMemMiB/1024)
	}
	return s
}

// mdInline keeps a line of outside text from breaking the list: no newlines.
func mdInline(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

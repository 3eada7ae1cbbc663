package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// run writes one run of a phase: when it ran, then the phase's tables.
func (n *nb) run(ph string, i, total int, r *phaseRun) {
	if total > 1 {
		n.p("### Run %d of %d\n\n", i+1, total)
	}
	line := "Started " + n.clock(r.start)
	switch {
	case r.finished && r.outcome == phases.OutcomeCancelled:
		line += fmt.Sprintf(", cancelled at %s after %s", n.clock(r.end), units.Span(r.end.Sub(r.start)))
		if r.err != "" {
			line += " (" + r.err + ")"
		}
	case r.finished && r.err != "":
		line += fmt.Sprintf(", failed at %s after %s: %s", n.clock(r.end), units.Span(r.end.Sub(r.start)), r.err)
	case r.finished:
		line += fmt.Sprintf(", finished %s (%s)", n.clock(r.end), units.Span(r.end.Sub(r.start)))
	default:
		last := r.start
		if len(r.events) > 0 {
			last = r.events[len(r.events)-1].Time
		}
		line += fmt.Sprintf(", not finished (last result %s)", n.clock(last))
	}
	n.ln(line + ".\n")
	if r.params != nil {
		if b, err := json.Marshal(r.params); err == nil && string(b) != "null" && string(b) != "{}" {
			n.p("Parameters: `%s`\n\n", strings.ReplaceAll(string(b), "`", "'"))
		}
	}
	tag := fmt.Sprintf("%s-%d", ph, i+1)
	switch ph {
	case phases.Load:
		n.loadRun(r, tag)
	case phases.Macro:
		n.macroRun(r, tag)
	case phases.Micro:
		n.microRun(r)
	case phases.NCCL:
		n.ncclRun(r)
	case phases.Profile:
		n.profileRun(r)
	}
}
func (n *nb) loadRun(r *phaseRun, tag string) {
	var ms []phases.Milestone
	var snaps []snapshot
	var log []string
	var stalls []stallAt
	for _, ev := range r.events {
		switch d := ev.Data.(type) {
		case phases.Milestone:
			ms = append(ms, d)
		case phases.GPUSample:
			snaps = append(snaps, snapshot{ev.Time, d})
		case phases.ServerEvent:
			s := fmt.Sprintf("- %s server **%s**", n.clock(ev.Time), d.Action)
			if d.Node != "" {
				s = fmt.Sprintf("- %s %s server **%s**", n.clock(ev.Time), mdCell(d.Node), d.Action)
			}
			if d.Detail != "" {
				s += ": " + d.Detail
			}
			log = append(log, s)
		case phases.LoadFailure:
			log = append(log, failureLine(n.clock(ev.Time), d))
		case phases.Stall:
			stalls = append(stalls, stallAt{ev.Time, d})
			s := fmt.Sprintf("- %s **stall**%s: %s, no progress for %s", n.clock(ev.Time), onNode(d.Node), gpuList(d.GPUs, d.MemoryGiB), units.ExactDuration(d.ForS))
			if d.Line != "" {
				s += fmt.Sprintf("; last log line: `%s`", noTicks(d.Line))
			}
			log = append(log, s)
		case phases.Diagnosis:
			log = append(log, diagnosisLines(n.clock(ev.Time), d)...)
		}
	}
	if len(log) > 0 {
		n.ln(strings.Join(log, "\n") + "\n")
	}
	if len(ms) > 0 {
		n.ln("| stage | at | value | evidence |")
		n.ln("|---|---:|---|---|")
		for _, m := range ms {
			stage := phases.StageLabel(m.Stage)
			if m.Node != "" {
				stage += " · " + m.Node
			}
			n.p("| %s | %s | %s | %s |\n", mdCell(stage), units.ExactDuration(m.AtS), mdCell(m.Value), mdCell(m.Line))
		}
		n.ln("")
	}
	hosts := snapHosts(snaps)
	if len(hosts) > 1 {
		// Several nodes: one table (and chart) per node.
		for _, h := range hosts {
			var mine []snapshot
			for _, sn := range snaps {
				if sn.s.Host == h {
					mine = append(mine, sn)
				}
			}
			var st []stallAt
			for _, x := range stalls {
				if x.s.Node == "" || x.s.Node == h {
					st = append(st, x)
				}
			}
			n.p("Node **%s**: ", mdCell(h))
			n.gpuTimeline(mine, st, tag+"-"+fileSafe(h))
		}
	} else if len(snaps) > 0 {
		n.gpuTimeline(snaps, stalls, tag)
	}
}

// onNode is " on NODE" for an event of one node of several, else "".
func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " on " + mdCell(node)
}

// snapHosts are the hosts the snapshots come from, in order.
func snapHosts(snaps []snapshot) []string {
	var out []string
	seen := map[string]bool{}
	for _, sn := range snaps {
		if !seen[sn.s.Host] {
			seen[sn.s.Host] = true
			out = append(out, sn.s.Host)
		}
	}
	return out
}

// fileSafe keeps letters, digits, dots and dashes of a host name for a
// chart's file name.
func fileSafe(h string) string {
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func gpuList(gpus []int, mem []float64) string {
	if len(gpus) == 0 {
		return "GPUs"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("GPU %d", g)
		if i < len(mem) {
			parts[i] += fmt.Sprintf(" at %.1f GiB", mem[i])
		}
	}
	if len(parts) > 4 {
		return fmt.Sprintf("%d GPUs (%s, …)", len(parts), strings.Join(parts[:2], ", "))
	}
	return strings.Join(parts, ", ")
}

type snapshot struct {
	at time.Time
	s  phases.GPUSample
}

// gpuSeries turns snapshots into one memory series (GiB) per GPU index.
func gpuSeries(snaps []snapshot) (idx []int, series map[int][]float64) {
	series = map[int][]float64{}
	for i, sn := range snaps {
		for _, g := range sn.s.GPUs {
			if _, ok := series[g.Index]; !ok {
				series[g.Index] = make([]float64, len(snaps))
				for j := range series[g.Index] {
					series[g.Index][j] = -1
				}
				idx = append(idx, g.Index)
			}
			if g.MemoryUsedMiB != nil {
				series[g.Index][i] = *g.MemoryUsedMiB / 1024
			}
		}
	}
	sort.Ints(idx)
	return idx, series
}

type stallAt struct {
	at time.Time
	s  phases.Stall
}

// stallsOf names the stalls that involved GPU g ("09:13:20 for 5m00s").
func (n *nb) stallsOf(g int, stalls []stallAt) string {
	var out []string
	for _, st := range stalls {
		for _, x := range st.s.GPUs {
			if x == g {
				out = append(out, fmt.Sprintf("%s for %s", n.clock(st.at), units.ExactDuration(st.s.ForS)))
				break
			}
		}
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

func (n *nb) gpuTimeline(snaps []snapshot, stalls []stallAt, tag string) {
	idx, series := gpuSeries(snaps)
	span := snaps[len(snaps)-1].at.Sub(snaps[0].at)
	n.p("GPU memory from %s to %s (%d samples over %s):\n\n", n.clock(snaps[0].at), n.clock(snaps[len(snaps)-1].at), len(snaps), units.Span(span))
	n.ln("| GPU | first GiB | last GiB | max GiB | timeline | stalled |")
	n.ln("|---:|---:|---:|---:|---|---|")
	for _, g := range idx {
		s := series[g]
		first, last, top := -1.0, -1.0, -1.0
		for _, v := range s {
			if v < 0 {
				continue
			}
			if first < 0 {
				first = v
			}
			last = v
			top = max(top, v)
		}
		n.p("| %d | %s | %s | %s | `%s` | %s |\n", g, gib(first), gib(last), gib(top), Sparkline(s, 40), n.stallsOf(g, stalls))
	}
	n.ln("")
	if len(snaps) > 1 {
		if link := n.addChart(tag+"-memory."+n.chartExt(), "GPU memory during the load", func() ([]byte, error) { return loadChart(snaps, stalls, n.chartExt()) }); link != "" {
			n.ln(link + "\n")
		}
	}
}

func gib(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

// noTicks keeps s inside an inline code span.
func noTicks(s string) string { return strings.ReplaceAll(s, "`", "'") }

// failureLine is a load failure in the notebook's load story; an exit
// comes with the log's last lines.
func failureLine(clock string, d phases.LoadFailure) string {
	if d.Kind != "exited" {
		return fmt.Sprintf("- %s **failure (%s)**%s, rank %d: `%s`", clock, d.Kind, onNode(d.Node), d.Rank, noTicks(d.Line))
	}
	s := fmt.Sprintf("- %s **failure (exited)**%s: the server process", clock, onNode(d.Node))
	if d.PID > 0 {
		s += fmt.Sprintf(" (pid %d)", d.PID)
	}
	s += " exited during its load"
	if len(d.Tail) == 0 {
		return s + "; last log line: `" + noTicks(d.Line) + "`"
	}
	s += "; its log's last lines:\n\n  ```text\n"
	for _, l := range d.Tail {
		s += "  " + noTicks(l) + "\n"
	}
	return s + "  ```\n"
}

// joinInts writes xs joined by sep.
func joinInts(xs []int, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}

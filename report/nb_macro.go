package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// macroEvents are what a macro run's events say, gathered for its section.
type macroEvents struct {
	levels  []phases.LevelResult
	plateau *phases.Plateau
	bound   []phases.Event // the client-bound events, with their time
	slo     string
	gpuSrc  []phases.GPUTelSource
	path    *phases.MacroPath
	search  *phases.Search
	sources map[string]bool // where the levels' token counts came from
}

// macroOf gathers a macro run's events: the one fold the notebook's
// section, its summary and the sweep comparison read.
func macroOf(events []phases.Event) macroEvents {
	m := macroEvents{sources: map[string]bool{}}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.LevelResult:
			m.levels = append(m.levels, d)
			if d.TokenSource != "" {
				m.sources[d.TokenSource] = true
			}
		case phases.Plateau:
			p := d
			m.plateau = &p
		case phases.SLOMet:
			m.slo = d.Text
		case phases.Search:
			sr := d
			m.search = &sr
		case phases.GPUTelSource:
			m.gpuSrc = append(m.gpuSrc, d)
		case phases.MacroPath:
			p := d
			m.path = &p
		case phases.ClientBound:
			m.bound = append(m.bound, ev)
		}
	}
	return m
}

func (n *nb) macroRun(r *phaseRun, tag string) {
	m := macroOf(r.events)
	if len(m.bound) > 0 {
		lines := make([]string, len(m.bound))
		for i, ev := range m.bound {
			d := ev.Data.(phases.ClientBound)
			lines[i] = fmt.Sprintf("- %s level C=%d limited by the client: %s", n.clock(ev.Time), d.Concurrency, d.Reason)
		}
		n.ln(strings.Join(lines, "\n") + "\n")
	}
	levels := m.levels
	if len(levels) == 0 {
		n.ln("No level finished.\n")
		return
	}
	n.levelTable(m)
	n.levelNotes(levels)
	n.pathLines(m.path, levels)
	n.ln("Times in ms. TPOT = (E2E − TTFT) / (output tokens − 1) per request, as vLLM defines it.")
	if len(m.sources) > 0 {
		var s []string
		for k := range m.sources {
			s = append(s, k)
		}
		sort.Strings(s)
		n.p("Token counts from: %s.\n", strings.Join(s, ", "))
	}
	n.ln("")
	n.plateauLines(m.plateau, m.slo)
	n.searchLines(m.search)
	n.scheduleLines(levels)
	n.goodputLines(levels)
	n.sessionLevels(levels)
	n.serverLevels(levels)
	n.gpuLevels(levels, m.gpuSrc, tag)
	n.levelTrends(levels, r.params, tag)
}

// levelTable is the table of a sweep's levels, one row a level.
func (n *nb) levelTable(m macroEvents) {
	n.ln("| C | done | failed | out tok/s | req/s | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | ITL p50 | E2EL p50 | KV max | |")
	n.ln("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, l := range m.levels {
		mark := ""
		if m.plateau != nil && l.Concurrency == m.plateau.Concurrency {
			mark = "**plateau**"
		}
		if l.ClientBound {
			mark = strings.TrimSpace(mark + " client-bound")
			if l.ClientBoundReason != "" && len(m.bound) == 0 {
				mark += ": " + mdCell(l.ClientBoundReason)
			}
		}
		if l.Few() {
			mark = strings.TrimSpace(fmt.Sprintf("%s few requests (%d < %d)", mark, l.Completed, phases.MinRequests))
		}
		if len(l.Steered) > 0 {
			mark = strings.TrimSpace(mark + " steered by hand: " + mdCell(strings.Join(l.Steered, "; ")))
		}
		kv := "—"
		if l.Server != nil && l.Server.Available {
			kv = fmt.Sprintf("%.0f%%", 100*l.Server.MaxKVCacheUsage)
		}
		c := levelLabel(l)
		n.p("| %s | %d | %d | %.1f | %.2f | %.1f | %.1f | %.2f | %.2f | %.2f | %.0f | %s | %s |\n",
			c, l.Completed, l.Failed, l.OutputThroughput, l.RequestThroughput, l.MedianTTFTms, l.P99TTFTms,
			l.MedianTPOTms, l.P99TPOTms, l.MedianITLms, l.MedianE2ELms, kv, mark)
	}
	n.ln("")
}

// levelNotes lists each level's notes, warnings and failures as the server
// worded them.
func (n *nb) levelNotes(levels []phases.LevelResult) {
	count := 0
	for _, l := range levels {
		for _, x := range l.Notes {
			n.p("- C=%d: %s\n", l.Concurrency, x)
			count++
		}
		for _, x := range l.Warnings {
			n.p("- C=%d warning: %s\n", l.Concurrency, x)
			count++
		}
		for _, e := range l.FailureExamples {
			// What the server said, as it said it (bounded to 200 bytes).
			n.p("- C=%d error: %s ×%d", l.Concurrency, e.Kind, e.Count)
			if e.Body != "" {
				n.p(": `%s`", noTicks(strings.Join(strings.Fields(e.Body), " ")))
			}
			n.ln("")
			count++
		}
	}
	if count > 0 {
		n.ln("")
	}
}

// plateauLines names the plateau and why it is there, or says there is
// none (with the SLO's answer).
func (n *nb) plateauLines(plateau *phases.Plateau, slo string) {
	if plateau == nil {
		n.ln("No plateau named: throughput was still growing at the last level.\n")
		if slo != "" {
			n.p("**SLO:** %s\n\n", slo)
		}
		return
	}
	n.p("**Plateau:** %.0f tok/s from C=%d (doubling concurrency adds less than 10%% output throughput).\n\n", plateau.OutputThroughput, plateau.Concurrency)
	if len(plateau.Steered) > 0 {
		n.p("The plateau was found among levels steered by hand (C=%s): the decode-time budget keeps the plateau of a sweep that ran as planned when there is one.\n\n", joinInts(plateau.Steered, ", C="))
	}
	if v := Verdict(*plateau, slo, n.bud); v != "" {
		n.p("**Why:** %s\n\n", v)
	}
}

// levelTrends draws throughput and TPOT across the levels: sparklines,
// then the charts.
func (n *nb) levelTrends(levels []phases.LevelResult, params any, tag string) {
	var thr, tpot []float64
	for _, l := range levels {
		thr = append(thr, l.OutputThroughput)
		tpot = append(tpot, l.MedianTPOTms)
	}
	n.p("- output tok/s by level: `%s` (%.0f → %.0f)\n", Sparkline(thr, 40), thr[0], thr[len(thr)-1])
	n.p("- TPOT p50 by level: `%s` (%.2f → %.2f ms)\n\n", Sparkline(tpot, 40), tpot[0], tpot[len(tpot)-1])
	if cl := chartLevels(levels); len(cl) > 1 {
		if link := n.addChart(tag+"-throughput-tpot."+n.chartExt(), "Output throughput and TPOT vs concurrency", func() ([]byte, error) { return macroChart(cl, n.chartExt()) }); link != "" {
			n.ln(link + "\n")
		}
	}
	n.latencyChart(levels, params, tag)
}

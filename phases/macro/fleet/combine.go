package fleet

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// LevelResult is the level as a single client's sweep gives it, made from
// the agents' own results: counts and tokens summed, throughputs over the
// longest agent's window, every percentile from the merged histograms,
// means and deviations pooled, and each agent's share, clock
// offset and self-audit in Agents.
func (lv Level) LevelResult(c int, rate float64) phases.LevelResult {
	out := phases.LevelResult{Concurrency: c, Rate: rate, Failures: map[string]int{}}
	var parts []phases.LevelResult
	var names []string
	for i, a := range lv.Agents {
		out.Agents = append(out.Agents, agentAudit(agentName(a.Host, i), a))
		if a.Level != nil {
			parts, names = append(parts, *a.Level), append(names, agentName(a.Host, i))
		}
	}
	if len(parts) > 0 {
		first := parts[0]
		out.ThroughputWindow, out.TokenSource, out.InputTokenSource = first.ThroughputWindow, first.TokenSource, first.InputTokenSource
	}
	sum(&out, parts)
	carryNotes(&out, parts, names)
	if sl, note := serverOf(parts, names); sl != nil {
		out.Server = sl
		if note != "" {
			out.Notes = append(out.Notes, note)
		}
	}
	pooled(&out, parts)
	lv.percentiles(&out, parts)
	out.Schedule = schedule(rate, parts, names, &out)
	if rate == 0 {
		out.MaxConcurrency = c
	}
	out.FewRequests = out.Completed < phases.MinRequests
	if out.FewRequests && out.Completed > 0 {
		out.Warnings = append([]string{macro.FewRequestsWarning(out.Completed)}, out.Warnings...)
	}
	if n := lv.Note(); n != "" {
		out.Notes = append(out.Notes, n)
	}
	out.ClientBound = len(lv.Bottleneck) > 0
	if out.ClientBound {
		out.ClientBoundReason = "load agent was the bottleneck: " + lv.Bottleneck[0]
	}
	return out
}

func agentAudit(name string, a AgentLevel) phases.AgentAudit {
	return phases.AgentAudit{Agent: name, Completed: int(a.OK), Lost: a.Lost,
		StartMs: float64(a.Start.Microseconds()) / 1e3, OffsetMs: float64(a.Offset.Offset.Microseconds()) / 1e3, UncertaintyMs: float64(a.Offset.Uncertainty.Microseconds()) / 1e3,
		CPUFraction: a.Audit.CPUFraction, P99SendLagms: a.Audit.P99SendLagms, EventsPerRead: a.Audit.EventsPerRead, ClientBound: a.Audit.ClientBound}
}

// sum adds up what adds: counts, tokens, CPU, requests in flight; the
// window is the longest agent's, the send lag the worst agent's.
func sum(out *phases.LevelResult, parts []phases.LevelResult) {
	for _, p := range parts {
		out.Completed += p.Completed
		out.Failed += p.Failed
		maps.Copy(out.Failures, addCounts(out.Failures, p.Failures))
		out.TotalInputTokens += p.TotalInputTokens
		out.TotalOutputTokens += p.TotalOutputTokens
		out.DurationS = max(out.DurationS, p.DurationS)
		out.ClientCPUs += p.ClientCPUs
		out.MeanInFlight += p.MeanInFlight
		out.MaxSendLagms = max(out.MaxSendLagms, p.MaxSendLagms)
	}
	if out.DurationS > 0 {
		out.RequestThroughput = float64(out.Completed) / out.DurationS
		out.OutputThroughput = float64(out.TotalOutputTokens) / out.DurationS
		out.TotalTokenThroughput = float64(out.TotalInputTokens+out.TotalOutputTokens) / out.DurationS
	}
}

// carryNotes puts the agents' own level notes and warnings into the
// merged level: one said by every agent once, as it is; any other with
// the name of the agent that said it.
func carryNotes(out *phases.LevelResult, parts []phases.LevelResult, names []string) {
	notes, warns := make([][]string, len(parts)), make([][]string, len(parts))
	for i, p := range parts {
		notes[i] = slices.DeleteFunc(slices.Clone(p.Notes), func(n string) bool {
			return strings.HasPrefix(n, phases.LiveChangePrefix) // the level says the whole change
		})
		warns[i] = withoutFew(ownWarnings(p.Warnings, len(parts)), p.Completed)
	}
	out.Notes = append(out.Notes, byAgent(notes, names)...)
	out.Warnings = append(out.Warnings, byAgent(warns, names)...)
}

// byAgent lists each agent's lines in order, a line every agent says
// once and bare, any other prefixed by its agent's name.
func byAgent(lines [][]string, names []string) []string {
	var out []string
	seen := map[string]bool{}
	for i, ls := range lines {
		for _, l := range ls {
			switch {
			case len(lines) < 2:
				out = append(out, l)
			case saidByAll(lines, l):
				if !seen[l] {
					out = append(out, l)
				}
				seen[l] = true
			default:
				out = append(out, names[i]+": "+l)
			}
		}
	}
	return out
}

func saidByAll(lines [][]string, l string) bool {
	for _, ls := range lines {
		if !slices.Contains(ls, l) {
			return false
		}
	}
	return true
}

// otherClients marks an agent's warning that the server served more than
// it sent: with several agents, the others sent the rest.
const otherClients = "another client of the server"

// ownWarnings are an agent's warnings that still hold of the whole level.
func ownWarnings(ws []string, agents int) []string {
	var out []string
	for _, w := range ws {
		if agents < 2 || !strings.Contains(w, otherClients) {
			out = append(out, w)
		}
	}
	return out
}

func addCounts(into, from map[string]int) map[string]int {
	out := maps.Clone(into)
	for k, v := range from {
		out[k] += v
	}
	return out
}

// stat picks one metric's mean and deviation out of a level.
type stat struct {
	mean, std func(*phases.LevelResult) *float64
}

var stats = []stat{
	{func(l *phases.LevelResult) *float64 { return &l.MeanTTFTms }, func(l *phases.LevelResult) *float64 { return &l.StdTTFTms }},
	{func(l *phases.LevelResult) *float64 { return &l.MeanTPOTms }, func(l *phases.LevelResult) *float64 { return &l.StdTPOTms }},
	{func(l *phases.LevelResult) *float64 { return &l.MeanITLms }, func(l *phases.LevelResult) *float64 { return &l.StdITLms }},
	{func(l *phases.LevelResult) *float64 { return &l.MeanE2ELms }, func(l *phases.LevelResult) *float64 { return &l.StdE2ELms }},
}

// pooled sets each mean and deviation as those of all the agents'
// requests together (weighted by completed requests), and the token
// events per read likewise.
func pooled(out *phases.LevelResult, parts []phases.LevelResult) {
	if out.Completed == 0 {
		return
	}
	n := float64(out.Completed)
	for _, s := range stats {
		var m float64
		for i := range parts {
			m += float64(parts[i].Completed) * *s.mean(&parts[i])
		}
		m /= n
		var v float64
		for i := range parts {
			d := *s.mean(&parts[i]) - m
			sd := *s.std(&parts[i])
			v += float64(parts[i].Completed) * (sd*sd + d*d)
		}
		*s.mean(out), *s.std(out) = m, math.Sqrt(v/n)
	}
	for _, p := range parts {
		out.EventsPerRead += float64(p.Completed) * p.EventsPerRead / n
	}
}

// schedule is an open loop's schedule over all agents: the sends summed,
// the scheduled and achieved rates the sum of the agents' (the union of
// their sends), the scheduling delays those of the merged send lag, and
// behind when any agent fell behind (nil: a closed loop).
func schedule(rate float64, parts []phases.LevelResult, names []string, out *phases.LevelResult) *phases.Schedule {
	var sc *phases.Schedule
	var why []string
	for i, p := range parts {
		ps := p.Schedule
		if ps == nil {
			continue
		}
		if sc == nil {
			c := *ps
			sc = &c
			sc.RequestedRate, sc.Requests, sc.ScheduledRate, sc.AchievedRate, sc.MaxDelayMs, sc.FellBehind, sc.Why = rate, 0, 0, 0, 0, false, ""
		}
		sc.Requests += ps.Requests
		sc.ScheduledRate += ps.ScheduledRate
		sc.AchievedRate += ps.AchievedRate
		sc.MaxDelayMs = max(sc.MaxDelayMs, ps.MaxDelayMs)
		if ps.FellBehind {
			why = append(why, fmt.Sprintf("%s: %s", names[i], ps.Why))
		}
	}
	if sc != nil {
		sc.P50DelayMs, sc.P99DelayMs = out.MedianSendLagms, out.P99SendLagms
		sc.FellBehind, sc.Why = len(why) > 0, strings.Join(why, "; ")
	}
	return sc
}

// percentiles sets every percentile the level reports from the merged
// histograms; a metric no agent sent a histogram of, though an agent
// measured it, keeps the largest agent's, and the level's warnings say so.
func (lv Level) percentiles(out *phases.LevelResult, parts []phases.LevelResult) {
	var fell []string
	for _, r := range reported {
		if h := lv.hists[r.metric]; h != nil && h.Count() > 0 {
			for j, q := range r.qs {
				*r.field(out, j) = ms(h.Quantile(q))
			}
			continue
		}
		for _, p := range parts {
			for j := range r.qs {
				*r.field(out, j) = max(*r.field(out, j), *r.field(&p, j))
			}
		}
		if *r.field(out, 0) > 0 {
			fell = append(fell, r.name)
		}
	}
	out.Percentiles = lv.asked()
	if len(fell) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s percentiles are the largest load agent's, not merged: no agent sent their histograms", strings.Join(fell, ", ")))
	}
	if len(parts) > 1 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d load agents: percentiles merged from all requests' histograms", len(parts)))
	}
}

// asked are the extra percentiles asked for, from the merged histograms.
func (lv Level) asked() map[string]float64 {
	if len(lv.Pcts.Metrics) == 0 || len(lv.Pcts.Of) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, m := range lv.Pcts.Metrics {
		for _, q := range lv.Pcts.Of {
			v := 0.0
			if h := lv.hists[m]; h != nil && h.Count() > 0 {
				v = ms(h.Quantile(q / 100))
			}
			out[macro.Key(m, q)] = v
		}
	}
	return out
}

// percentileOf is one metric's percentiles a level reports: its
// histogram's name, its name in words, the quantiles and their fields.
type percentileOf struct {
	metric, name string
	qs           []float64
	field        func(l *phases.LevelResult, i int) *float64
}

func fields(fs ...func(*phases.LevelResult) *float64) func(*phases.LevelResult, int) *float64 {
	return func(l *phases.LevelResult, i int) *float64 { return fs[i](l) }
}

var three = []float64{0.50, 0.90, 0.99}

var reported = []percentileOf{
	{hdrsec.TTFT, "TTFT", three, fields(func(l *phases.LevelResult) *float64 { return &l.MedianTTFTms }, func(l *phases.LevelResult) *float64 { return &l.P90TTFTms }, func(l *phases.LevelResult) *float64 { return &l.P99TTFTms })},
	{hdrsec.TPOT, "TPOT", three, fields(func(l *phases.LevelResult) *float64 { return &l.MedianTPOTms }, func(l *phases.LevelResult) *float64 { return &l.P90TPOTms }, func(l *phases.LevelResult) *float64 { return &l.P99TPOTms })},
	{hdrsec.ITL, "ITL", three, fields(func(l *phases.LevelResult) *float64 { return &l.MedianITLms }, func(l *phases.LevelResult) *float64 { return &l.P90ITLms }, func(l *phases.LevelResult) *float64 { return &l.P99ITLms })},
	{hdrsec.ITLChunk, "per-chunk ITL", three, fields(func(l *phases.LevelResult) *float64 { return &l.MedianITLChunkms }, func(l *phases.LevelResult) *float64 { return &l.P90ITLChunkms }, func(l *phases.LevelResult) *float64 { return &l.P99ITLChunkms })},
	{hdrsec.E2EL, "E2EL", three, fields(func(l *phases.LevelResult) *float64 { return &l.MedianE2ELms }, func(l *phases.LevelResult) *float64 { return &l.P90E2ELms }, func(l *phases.LevelResult) *float64 { return &l.P99E2ELms })},
	{hdrsec.TTFB, "TTFB", []float64{0.50}, fields(func(l *phases.LevelResult) *float64 { return &l.MedianTTFBms })},
	{hdrsec.TTFAT, "TTFAT", []float64{0.50}, fields(func(l *phases.LevelResult) *float64 { return &l.MedianTTFATms })},
	{hdrsec.Lag, "send lag", []float64{0.50, 0.99}, fields(func(l *phases.LevelResult) *float64 { return &l.MedianSendLagms }, func(l *phases.LevelResult) *float64 { return &l.P99SendLagms })},
}

package fleet

import (
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// LevelResult is the level as a single client's sweep gives it, made from
// the agents' own results: counts and tokens summed, throughputs over the
// longest agent's window, TTFT, TPOT and E2EL percentiles from the merged
// histograms, means and deviations pooled, and each agent's share, clock
// offset and self-audit in Agents.
func (lv Level) LevelResult(c int, rate float64) phases.LevelResult {
	out := phases.LevelResult{Concurrency: c, Rate: rate, Failures: map[string]int{}}
	var parts []phases.LevelResult
	for i, a := range lv.Agents {
		out.Agents = append(out.Agents, agentAudit(agentName(a.Host, i), a))
		if a.Level != nil {
			parts = append(parts, *a.Level)
		}
	}
	if len(parts) > 0 {
		first := parts[0]
		out.ThroughputWindow, out.TokenSource, out.InputTokenSource = first.ThroughputWindow, first.TokenSource, first.InputTokenSource
	}
	sum(&out, parts)
	pooled(&out, parts)
	lv.percentiles(&out, parts)
	if rate == 0 {
		out.MaxConcurrency = c
	}
	out.FewRequests = out.Completed < phases.MinRequests
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
		out.P99SendLagms = max(out.P99SendLagms, p.P99SendLagms)
		out.MedianSendLagms = max(out.MedianSendLagms, p.MedianSendLagms)
		out.Warnings = append(out.Warnings, ownWarnings(p.Warnings, len(parts))...)
	}
	if out.DurationS > 0 {
		out.RequestThroughput = float64(out.Completed) / out.DurationS
		out.OutputThroughput = float64(out.TotalOutputTokens) / out.DurationS
		out.TotalTokenThroughput = float64(out.TotalInputTokens+out.TotalOutputTokens) / out.DurationS
	}
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

// percentiles sets TTFT, TPOT and E2EL's from the merged histograms; ITL's
// (per token, not in the histograms) are the largest agent's, said so.
func (lv Level) percentiles(out *phases.LevelResult, parts []phases.LevelResult) {
	set := func(name string, p50, p90, p99 *float64) {
		if q, ok := lv.Metrics[name]; ok && q.Count > 0 {
			*p50, *p90, *p99 = q.P50, q.P90, q.P99
		}
	}
	set("ttft", &out.MedianTTFTms, &out.P90TTFTms, &out.P99TTFTms)
	set("tpot", &out.MedianTPOTms, &out.P90TPOTms, &out.P99TPOTms)
	set("e2el", &out.MedianE2ELms, &out.P90E2ELms, &out.P99E2ELms)
	for _, p := range parts {
		out.MedianITLms, out.P90ITLms, out.P99ITLms = max(out.MedianITLms, p.MedianITLms), max(out.P90ITLms, p.P90ITLms), max(out.P99ITLms, p.P99ITLms)
		out.MedianITLChunkms, out.P90ITLChunkms, out.P99ITLChunkms = max(out.MedianITLChunkms, p.MedianITLChunkms), max(out.P90ITLChunkms, p.P90ITLChunkms), max(out.P99ITLChunkms, p.P99ITLChunkms)
		out.MedianTTFBms, out.MedianTTFATms = max(out.MedianTTFBms, p.MedianTTFBms), max(out.MedianTTFATms, p.MedianTTFATms)
	}
	if len(parts) > 1 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d load agents: TTFT, TPOT and E2EL percentiles merged from all requests; ITL, TTFB percentiles the largest agent's", len(parts)))
	}
}

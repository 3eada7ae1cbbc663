package servermetrics

import (
	"fmt"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Engines whose /metrics profdeck reads; Snapshot.Engine names the one a
// text came from.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// SGLang's metric names (python/sglang/srt/metrics/collector.py), newest
// first where SGLang renamed one. SGLang exposes them with --enable-metrics
// since 0.3.5 (Nov 2024); the first names (num_requests_running, ...) come
// from its earliest metrics. Scheduler series carry dp_rank/tp_rank labels
// when several schedulers report.
const (
	SGLangRunning        = "sglang:num_running_reqs"
	SGLangRunningOld     = "sglang:num_requests_running"
	SGLangQueued         = "sglang:num_queue_reqs"
	SGLangQueuedOld      = "sglang:num_requests_waiting"
	SGLangTokenUsage     = "sglang:token_usage"          // KV pool usage, 0..1
	SGLangGenThroughput  = "sglang:gen_throughput"       // tokens/s the scheduler measured over its last log interval
	SGLangCacheHitRate   = "sglang:cache_hit_rate"       // prefix (radix) cache hit rate, 0..1 (a percentage in the first release)
	SGLangMaxTokens      = "sglang:max_total_num_tokens" // the KV pool's size in tokens
	SGLangPromptTokens   = "sglang:prompt_tokens_total"
	SGLangGenTokens      = "sglang:generation_tokens_total"
	SGLangRequests       = "sglang:num_requests_total"
	SGLangRetracted      = "sglang:num_retracted_reqs" // requests retracted (preempted) right now: a gauge
	SGLangSpecAcceptLen  = "sglang:spec_accept_length" // mean accepted tokens per speculative step
	SGLangSpecAcceptRate = "sglang:spec_accept_rate"   // accepted over drafted tokens (newer releases)
)

// sglangName maps a family name to its sglang: form: a re-exporter may use
// underscores ("sglang_num_running_reqs"), and counters may lack _total.
func sglangName(name string, mf *dto.MetricFamily) (string, bool) {
	switch {
	case strings.HasPrefix(name, "sglang:"):
	case strings.HasPrefix(name, "sglang_"):
		name = "sglang:" + name[len("sglang_"):]
	default:
		return "", false
	}
	return canonical(name, mf), true
}

// sglangFigures folds SGLang's series: within one data-parallel rank the
// attention-TP schedulers report the same state, so a rank's figure is the
// largest of its series; the ranks are then summed (usage and rates are
// taken as the fullest rank).
type sglangFigures struct {
	perRank map[string]map[string]float64 // name → dp rank → value
	ranks   map[string]bool               // the dp ranks any sglang series named
	drops   drops
}

func (g *sglangFigures) add(name string, m *dto.Metric) bool {
	if g.ranks == nil {
		g.ranks = map[string]bool{}
	}
	if dp := label(m, "dp_rank"); dp != "" && len(g.ranks) < 4096 {
		g.ranks[dp] = true
	}
	switch name {
	case SGLangRunning, SGLangRunningOld, SGLangQueued, SGLangQueuedOld, SGLangTokenUsage, SGLangGenThroughput,
		SGLangCacheHitRate, SGLangMaxTokens, SGLangPromptTokens, SGLangGenTokens, SGLangRequests, SGLangRetracted,
		SGLangSpecAcceptLen, SGLangSpecAcceptRate:
	default:
		return false
	}
	v, ok := value(m)
	if !ok {
		g.drops.sample(name, m)
		return false
	}
	if name == SGLangTokenUsage && v > 1 {
		g.drops.say(fmt.Sprintf("%s: %g is no share of the KV cache (0 to 1): left out", name, v))
		return false
	}
	if g.perRank == nil {
		g.perRank = map[string]map[string]float64{}
	}
	ranks := g.perRank[name]
	if ranks == nil {
		ranks = map[string]float64{}
		g.perRank[name] = ranks
	}
	dp := label(m, "dp_rank")
	if _, ok := ranks[dp]; !ok && len(ranks) >= maxRanks {
		g.drops.say(fmt.Sprintf("data-parallel ranks past the first %d are left out", maxRanks))
		return true
	}
	if old, ok := ranks[dp]; !ok || v > old {
		ranks[dp] = v
	}
	return true
}

// maxRanks bounds the data-parallel ranks kept per figure.
const maxRanks = 4096

// sum is a figure summed over ranks; ok is false when no series had it.
func (g *sglangFigures) sum(names ...string) (float64, bool) {
	for _, n := range names {
		if ranks, ok := g.perRank[n]; ok {
			t := 0.0
			for _, v := range ranks {
				t += v
			}
			if math.IsInf(t, 0) || t > maxCount {
				// Absurd values overflowed: missing, said.
				g.drops.say(fmt.Sprintf("%s: the sum over ranks is past any count (%g): missing", n, float64(maxCount)))
				delete(g.perRank, n)
				return 0, false
			}
			return t, true
		}
	}
	return 0, false
}

// top is a figure's largest value over ranks.
func (g *sglangFigures) top(name string) (float64, bool) {
	ranks, ok := g.perRank[name]
	if !ok {
		return 0, false
	}
	t := math.Inf(-1)
	for _, v := range ranks {
		t = math.Max(t, v)
	}
	return t, true
}

// mean is a figure's mean over ranks.
func (g *sglangFigures) mean(name string) (float64, bool) {
	s, ok := g.sum(name)
	if !ok {
		return 0, false
	}
	return s / float64(len(g.perRank[name])), true
}

// fill sets the snapshot's figures from SGLang's series.
func (g *sglangFigures) fill(s *Snapshot) {
	if len(g.perRank) == 0 && len(g.ranks) == 0 {
		return
	}
	s.Engine = EngineSGLang
	s.Running, _ = g.sum(SGLangRunning, SGLangRunningOld)
	s.Waiting, _ = g.sum(SGLangQueued, SGLangQueuedOld)
	if v, ok := g.top(SGLangTokenUsage); ok {
		s.KVCacheUsage, s.KVCacheMetric = v, SGLangTokenUsage
	}
	s.GenerationTokens, _ = g.sum(SGLangGenTokens)
	if v, ok := g.sum(SGLangPromptTokens); ok {
		s.PromptTokens, s.PromptTokensMetric = v, SGLangPromptTokens
	}
	s.Requests, _ = g.sum(SGLangRequests)
	if v, ok := g.sum(SGLangGenThroughput); ok {
		s.GenThroughput = &v
	}
	if v, ok := g.mean(SGLangCacheHitRate); ok {
		if v > 1 {
			v /= 100 // the first release published a percentage
		}
		s.CacheHitRate = &v
	}
	if v, ok := g.sum(SGLangMaxTokens); ok {
		s.KVCacheTokens = &v
	}
	if v, ok := g.sum(SGLangRetracted); ok {
		s.Retracted = &v
	}
	if v, ok := g.mean(SGLangSpecAcceptLen); ok {
		s.SpecAcceptLength = &v
	}
	if v, ok := g.mean(SGLangSpecAcceptRate); ok {
		s.SpecAcceptRateNow = &v
	}
	for name := range g.perRank {
		s.Found = append(s.Found, name)
	}
	s.Engines = max(1, len(g.ranks))
}

// sglangMissing lists the figures an SGLang snapshot has no series for.
func sglangMissing(has map[string]bool) []string {
	var out []string
	for _, f := range []struct {
		field string
		names []string
	}{
		{"running", []string{SGLangRunning, SGLangRunningOld}},
		{"waiting", []string{SGLangQueued, SGLangQueuedOld}},
		{"kv_cache_usage", []string{SGLangTokenUsage}},
		{"preemptions_total", nil}, // SGLang has no preemption counter
		{"generation_tokens_total", []string{SGLangGenTokens}},
		{"prompt_tokens_total", []string{SGLangPromptTokens}},
		{"requests_total", []string{SGLangRequests}},
	} {
		found := false
		for _, n := range f.names {
			found = found || has[n]
		}
		if !found {
			out = append(out, f.field)
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

package vllmemu

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// genRate turns the generation-token total into SGLang's gen_throughput
// gauge: the rate between samples at least a second apart.
type genRate struct {
	at     time.Time
	tokens int64
	rate   float64
}

func (g *genRate) update(now time.Time, tokens int64) float64 {
	switch dt := now.Sub(g.at).Seconds(); {
	case g.at.IsZero():
		g.at, g.tokens = now, tokens
	case dt >= 1:
		g.rate = float64(max(0, tokens-g.tokens)) / dt
		g.at, g.tokens = now, tokens
	}
	return g.rate
}

// hitRate turns the prefix cache's totals into SGLang's cache_hit_rate
// gauge: the share of prompt tokens hit since the previous scrape that saw
// new prompts (SGLang reports it per prefill batch).
type hitRate struct {
	queries, hits int64
	rate          float64
}

func (h *hitRate) update(queries, hits int64) float64 {
	if dq := queries - h.queries; dq > 0 {
		h.rate = float64(hits-h.hits) / float64(dq)
	}
	h.queries, h.hits = queries, hits
	return h.rate
}

// serveSGLangMetrics writes the Prometheus text of an SGLang server
// started with --enable-metrics (0.4 names, one scheduler: no dp_rank).
func (e *Emulator) serveSGLangMetrics(w http.ResponseWriter) {
	queries, hits := e.prefix.totals()
	e.mu.Lock()
	st := e.st.state
	hitRate := e.hit.update(queries, hits)
	gen := e.gen.update(time.Now(), st.GenerationTokens)
	drafts, accepted := e.st.specDrafts, e.st.specAccepted
	e.mu.Unlock()

	lbl := fmt.Sprintf(`engine_type="unified",model_name=%q,pp_rank="0",tp_rank="0"`, e.cfg.Model)
	var b strings.Builder
	metric := func(kind, name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %s\n", name, help, name, kind, name, lbl, pyFloat(v))
	}
	usage := st.KVCacheUsage
	metric("gauge", "sglang:num_running_reqs", "The number of running requests.", float64(st.Running))
	metric("gauge", "sglang:num_used_tokens", "The number of used tokens.", float64(int(usage*float64(e.cfg.KVCacheTokens))))
	metric("gauge", "sglang:token_usage", "The token usage.", usage)
	metric("gauge", "sglang:gen_throughput", "The generation throughput (token/s).", gen)
	metric("gauge", "sglang:num_queue_reqs", "The number of requests in the waiting queue.", float64(st.Waiting))
	metric("gauge", "sglang:cache_hit_rate", "The prefix cache hit rate.", hitRate)
	metric("gauge", "sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", float64(e.cfg.KVCacheTokens))
	if e.sched().TokensPerStep > 1 && drafts > 0 {
		metric("gauge", "sglang:spec_accept_length", "The average acceptance length of speculative decoding.", 1+float64(accepted)/float64(drafts))
	}
	metric("counter", "sglang:prompt_tokens_total", "Number of prefill tokens processed.", float64(st.PromptTokens))
	metric("counter", "sglang:generation_tokens_total", "Number of generation tokens processed.", float64(st.GenerationTokens))
	metric("counter", "sglang:num_requests_total", "Number of requests processed.", float64(st.Succeeded))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

package vllmemu

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// emuHist is a Prometheus histogram with fixed buckets.
type emuHist struct {
	bounds []float64
	counts []int64 // per bucket, not cumulative
	sum    float64
	n      int64
}

func newEmuHist(bounds ...float64) *emuHist {
	return &emuHist{bounds: bounds, counts: make([]int64, len(bounds))}
}

func (h *emuHist) observe(v float64) {
	h.sum += v
	h.n++
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
}

// emuStats are the emulator's counters, gauges and histograms.
type emuStats struct {
	state                                     State
	specDrafts, specDraftTokens, specAccepted int64
	ttft, e2e, itl, tpot, iterTokens          *emuHist
}

func (s *emuStats) init() {
	// vLLM's bucket bounds (v1/metrics/loggers.py), trimmed.
	s.ttft = newEmuHist(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560)
	s.e2e = newEmuHist(0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680)
	s.itl = newEmuHist(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80)
	s.tpot = newEmuHist(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80)
	s.iterTokens = newEmuHist(1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
}

// serveMetrics writes the Prometheus text exposition under vLLM V1's
// current metric names, with the model_name and engine="0" labels.
func (e *Emulator) serveMetrics(w http.ResponseWriter) {
	e.mu.Lock()
	s := e.st
	st := s.state
	hists := []struct {
		name, help string
		h          emuHist
	}{
		{"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", *s.ttft},
		{"vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", *s.e2e},
		{"vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", *s.itl},
		{"vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", *s.tpot},
		{"vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", *s.iterTokens},
	}
	for i := range hists {
		hists[i].h.counts = append([]int64(nil), hists[i].h.counts...)
	}
	e.mu.Unlock()

	lbl := fmt.Sprintf(`engine="0",model_name=%q`, e.cfg.Model)
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, lbl, pyFloat(v))
	}
	counter := func(name, help string, v float64, extra string) {
		l := lbl
		if extra != "" {
			l = extra + "," + lbl
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s_total{%s} %s\n", name, help, name, name, l, pyFloat(v))
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(st.Running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(st.Waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", st.KVCacheUsage)
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", float64(st.Preemptions), "")
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", float64(st.PromptTokens), "")
	counter("vllm:generation_tokens", "Number of generation tokens processed.", float64(st.GenerationTokens), "")
	queries, hits := e.prefix.totals()
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", float64(queries), "")
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", float64(hits), "")
	counter("vllmemu:prefix_cache_evicted_blocks", "Prefix cache blocks evicted, least recently used first (the emulator's own counter).", float64(e.prefix.evicted()), "")
	counter("vllm:request_success", "Count of successfully processed requests.", float64(st.Succeeded), `finished_reason="length"`)
	if e.sched().TokensPerStep > 1 {
		counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", float64(s.specDrafts), "")
		counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", float64(s.specDraftTokens), "")
		counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", float64(s.specAccepted), "")
	}
	fmt.Fprintf(&b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"+
		"vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"%d\"} 1.0\n", e.cfg.KVCacheTokens/16)
	for _, h := range hists {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", h.name, h.help, h.name)
		var cum int64
		for i, bound := range h.h.bounds {
			cum += h.h.counts[i]
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %s\n", h.name, lbl, pyFloat(bound), pyFloat(float64(cum)))
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %s\n", h.name, lbl, pyFloat(float64(h.h.n)))
		fmt.Fprintf(&b, "%s_count{%s} %s\n%s_sum{%s} %s\n", h.name, lbl, pyFloat(float64(h.h.n)), h.name, lbl, pyFloat(h.h.sum))
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// pyFloat writes a float the way Python's repr does in prometheus_client
// output (1.0, 0.25, 1e-05).
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") && !strings.Contains(s, "Inf") && !strings.Contains(s, "NaN") {
		s += ".0"
	}
	return s
}

package servermetrics

import (
	"github.com/profdeck/profdeck/phases"
	"strings"
	"testing"
	"time"
)

// sglangText is SGLang 0.4-style /metrics of two DP ranks, each reported by
// two attention-TP schedulers (--enable-metrics-for-all-schedulers).
const sglangText = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",tp_rank="0",model_name="m"} 5.0
sglang:num_running_reqs{dp_rank="0",tp_rank="1",model_name="m"} 5.0
sglang:num_running_reqs{dp_rank="1",tp_rank="2",model_name="m"} 3.0
sglang:num_running_reqs{dp_rank="1",tp_rank="3",model_name="m"} 3.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{dp_rank="0",tp_rank="0",model_name="m"} 2.0
sglang:num_queue_reqs{dp_rank="1",tp_rank="2",model_name="m"} 1.0
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",tp_rank="0",model_name="m"} 0.25
sglang:token_usage{dp_rank="1",tp_rank="2",model_name="m"} 0.5
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{dp_rank="0",tp_rank="0",model_name="m"} 400.0
sglang:gen_throughput{dp_rank="1",tp_rank="2",model_name="m"} 300.0
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{dp_rank="0",tp_rank="0",model_name="m"} 0.5
sglang:cache_hit_rate{dp_rank="1",tp_rank="2",model_name="m"} 0.3
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 1000.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 5000.0
# TYPE vllm_like_noise gauge
vllm_like_noise 1
`

func TestSGLangNames(t *testing.T) {
	s, err := Parse(strings.NewReader(sglangText))
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine != EngineSGLang || s.Engines != 2 {
		t.Fatalf("engine %q, %d engines; want sglang, 2", s.Engine, s.Engines)
	}
	if s.Running != 8 || s.Waiting != 3 || s.KVCacheUsage != 0.5 || s.KVCacheMetric != SGLangTokenUsage {
		t.Errorf("running %v waiting %v kv %v (%s); want 8, 3, 0.5 (each DP rank once, the fullest KV)", s.Running, s.Waiting, s.KVCacheUsage, s.KVCacheMetric)
	}
	if s.GenThroughput == nil || *s.GenThroughput != 700 || s.CacheHitRate == nil || *s.CacheHitRate != 0.4 {
		t.Errorf("throughput %v, hit rate %v; want 700 (summed) and 0.4 (mean)", s.GenThroughput, s.CacheHitRate)
	}
	if s.PromptTokens != 1000 || s.GenerationTokens != 5000 || s.PromptTokensMetric != SGLangPromptTokens {
		t.Errorf("prompt %v (%s) generation %v", s.PromptTokens, s.PromptTokensMetric, s.GenerationTokens)
	}
	f := FiguresOf("x", s)
	if strings.Join(f.Missing, ",") != "preemptions_total,requests_total" {
		t.Errorf("missing %v; want preemptions_total,requests_total", f.Missing)
	}
}

func TestSGLangUnderscoreAndPercent(t *testing.T) {
	text := "sglang_num_running_reqs 2\nsglang_cache_hit_rate 87.5\n"
	s, _ := Parse(strings.NewReader(text))
	if s.Engine != EngineSGLang || s.Running != 2 || s.CacheHitRate == nil || *s.CacheHitRate != 0.875 {
		t.Fatalf("got engine %q running %v hit %v; want sglang, 2, 0.875", s.Engine, s.Running, s.CacheHitRate)
	}
}

// Without token counters the scheduler's own throughput gauge is the rate.
func TestSGLangThroughputGauge(t *testing.T) {
	s, _ := Parse(strings.NewReader("sglang:gen_throughput 123.5\nsglang:num_running_reqs 4\n"))
	now := time.Unix(100, 0)
	first := Stats(s, nil, 0, now)
	next := Stats(s, &s, time.Second, now.Add(time.Second))
	if first.GenTokS != 123.5 || next.GenTokS != 123.5 || next.Engine != EngineSGLang {
		t.Fatalf("gen tok/s %v then %v (engine %q); want the gauge's 123.5", first.GenTokS, next.GenTokS, next.Engine)
	}
	lvl := Summarize([]phases.ServerStats{first, next})
	if lvl.GenerationTokS != 123.5 {
		t.Fatalf("level throughput %v; want 123.5", lvl.GenerationTokS)
	}
}

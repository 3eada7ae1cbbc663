package servermetrics

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// vllmSignalsText is a vLLM 0.11 /metrics in its own format (HELP and TYPE
// lines, engine and model_name labels, Python float text) with two data-
// parallel engines, whose counters have grown n times.
func vllmSignalsText(n float64) string {
	var b strings.Builder
	counter := func(name, help string, perEngine float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for e := 0; e < 2; e++ {
			fmt.Fprintf(&b, "%s_total{engine=\"%d\",model_name=\"moonshotai/Kimi-K2.5\"} %s\n", name, e, pyFloatText(n*perEngine))
		}
	}
	fmt.Fprintf(&b, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n")
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"moonshotai/Kimi-K2.5\"} %s\n", pyFloatText(0.1*n))
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 3)
	counter("vllm:generation_tokens", "Number of generation tokens processed.", 500)
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", 1000)
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", 250)
	counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", 100)
	counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", 300)
	counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", 180)
	return b.String()
}

func pyFloatText(v float64) string {
	s := fmt.Sprint(v)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// A level's signals from a loopback /metrics: over each scrape the
// engines' counters grow by 2×1000 queried and 2×250 cached prompt tokens
// (hit rate 25%), 2×100 drafts of 2×300 tokens of which 2×180 accepted
// (acceptance 60%, mean accepted length 1 + 360/200 = 2.8) and 2×3
// preemptions; KV usage peaks at the last scrape.
func TestLevelSignalsFromLoopbackVLLM(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, vllmSignalsText(float64(n.Add(1))))
	}))
	defer srv.Close()
	s := NewScraper(srv.URL+"/metrics", srv.Client())
	t0 := time.Now()
	var stats []phases.ServerStats
	for i := range 4 {
		st, err := s.Scrape(ctxT(t), t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		stats = append(stats, st)
	}
	lvl := Summarize(stats)
	if lvl == nil || lvl.PrefixCacheHitRate == nil || math.Abs(*lvl.PrefixCacheHitRate-0.25) > 1e-9 {
		t.Fatalf("prefix hit rate %v, want 0.25", ptrText(lvl.PrefixCacheHitRate))
	}
	if lvl.SpecAcceptRate == nil || math.Abs(*lvl.SpecAcceptRate-0.6) > 1e-9 || lvl.SpecAcceptLength == nil || math.Abs(*lvl.SpecAcceptLength-2.8) > 1e-9 {
		t.Fatalf("spec acceptance %v, length %v; want 0.6 and 2.8", ptrText(lvl.SpecAcceptRate), ptrText(lvl.SpecAcceptLength))
	}
	if lvl.Preemptions != 18 || math.Abs(lvl.MaxKVCacheUsage-0.4) > 1e-9 || lvl.Engine != EngineVLLM {
		t.Fatalf("preemptions %g (want 3 scrapes × 6), KV %g (want 0.4), engine %q", lvl.Preemptions, lvl.MaxKVCacheUsage, lvl.Engine)
	}
}

// vLLM before 0.9.2 named the prefix counters vllm:gpu_prefix_cache_*:
// read when the new names are absent (a real v0.8 text's header, values
// added).
func TestPrefixCounterOldNames(t *testing.T) {
	text := "# HELP vllm:gpu_prefix_cache_queries_total GPU prefix cache queries, in terms of number of queried blocks.\n" +
		"# TYPE vllm:gpu_prefix_cache_queries_total counter\n" +
		"vllm:gpu_prefix_cache_queries_total{model_name=\"Qwen/Qwen2.5-Coder-32B-Instruct\"} 400.0\n" +
		"# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits, in terms of number of cached blocks.\n" +
		"# TYPE vllm:gpu_prefix_cache_hits_total counter\n" +
		"vllm:gpu_prefix_cache_hits_total{model_name=\"Qwen/Qwen2.5-Coder-32B-Instruct\"} 100.0\n"
	snap, err := Parse(strings.NewReader(text))
	if err != nil || !snap.HasPrefix || snap.PrefixQueries != 400 || snap.PrefixHits != 100 {
		t.Fatalf("%v %+v", err, snap)
	}
	both := text + strings.ReplaceAll(strings.ReplaceAll(text, "gpu_prefix", "prefix"), "400.0", "800.0")
	if snap, _ := Parse(strings.NewReader(both)); snap.PrefixQueries != 800 {
		t.Fatalf("with both names, the new ones count: %+v", snap)
	}
}

// SGLang publishes gauges, not counters: the level's figures are their
// means over the scrapes, its retracted requests the most at one scrape.
func TestLevelSignalsFromLoopbackSGLang(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := float64(n.Add(1))
		fmt.Fprintf(w, "# HELP sglang:num_running_reqs The number of running requests.\n# TYPE sglang:num_running_reqs gauge\n"+
			"sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\",dp_rank=\"0\"} 8.0\n"+
			"# HELP sglang:cache_hit_rate The prefix cache hit rate.\n# TYPE sglang:cache_hit_rate gauge\n"+
			"sglang:cache_hit_rate{model_name=\"m\",tp_rank=\"0\",dp_rank=\"0\"} %s\n"+
			"# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\n# TYPE sglang:spec_accept_length gauge\n"+
			"sglang:spec_accept_length{model_name=\"m\",tp_rank=\"0\",dp_rank=\"0\"} %s\n"+
			"# HELP sglang:num_retracted_reqs The number of retracted requests.\n# TYPE sglang:num_retracted_reqs gauge\n"+
			"sglang:num_retracted_reqs{model_name=\"m\",tp_rank=\"0\",dp_rank=\"0\"} %s\n",
			pyFloatText(0.2*i), pyFloatText(1.5+0.5*i), pyFloatText(4-i))
	}))
	defer srv.Close()
	s := NewScraper(srv.URL+"/metrics", srv.Client())
	var stats []phases.ServerStats
	for i := range 3 {
		st, err := s.Scrape(ctxT(t), time.Now().Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		stats = append(stats, st)
	}
	lvl := Summarize(stats)
	// Means of 0.2, 0.4, 0.6 and 2, 2.5, 3; retracted 3, 2, 1.
	if lvl.PrefixCacheHitRate == nil || math.Abs(*lvl.PrefixCacheHitRate-0.4) > 1e-9 || lvl.SpecAcceptLength == nil ||
		math.Abs(*lvl.SpecAcceptLength-2.5) > 1e-9 || lvl.MaxRetracted == nil || *lvl.MaxRetracted != 3 || lvl.Engine != EngineSGLang {
		t.Fatalf("hit %v length %v retracted %v engine %q", ptrText(lvl.PrefixCacheHitRate), ptrText(lvl.SpecAcceptLength),
			ptrText(lvl.MaxRetracted), lvl.Engine)
	}
}

func ptrText(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// The formulas shared by a second's figures and a level's: nil with
// nothing to divide by, a hit rate never above 1.
func TestSignalFormulas(t *testing.T) {
	for _, c := range []struct {
		name string
		got  *float64
		want string
	}{
		{"hit rate", hitRate(30, 40), "0.75"},
		{"hit rate above 1", hitRate(50, 40), "1"},
		{"hit rate, nothing queried", hitRate(5, 0), "nil"},
		{"accept length", acceptLength(6, 4), "2.5"},
		{"accept length, no draft", acceptLength(6, 0), "nil"},
		{"accept rate", acceptRate(3, 4), "0.75"},
		{"accept rate, no draft token", acceptRate(3, 0), "nil"},
	} {
		if g := ptrText(c.got); g != c.want {
			t.Errorf("%s: %s, want %s", c.name, g, c.want)
		}
	}
}

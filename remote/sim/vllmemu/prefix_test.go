package vllmemu

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Two prompts that share their first 40 one-token words: the second hits
// the first's two whole 16-token blocks (32 tokens), not the partial
// third; /metrics counts 2 × 41 tokens queried, 32 hit.
func TestEmulatorPrefixCacheCounts(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: time.Millisecond, CoarseTiming: true})
	b := sharedPrompts(t, url)
	q, okQ := metric(string(b), "vllm:prefix_cache_queries_total")
	h, okH := metric(string(b), "vllm:prefix_cache_hits_total")
	if !okQ || !okH || q != 82 || h != 32 {
		t.Fatalf("queries %v (%v), hits %v (%v); want 82 and 32", q, okQ, h, okH)
	}
	// As vLLM counts them, the steps' tokens hold the whole prompts, the
	// 32 cached tokens included, and every generated token: a window's
	// step tokens less its prompt tokens are its generated tokens.
	// The last step's counters may land just after its response ended.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if g, _ := metric(string(b), "vllm:generation_tokens_total"); g >= 4 {
			break
		}
		b = scrape(t, url)
	}
	steps, _ := metric(string(b), "vllm:iteration_tokens_total_sum")
	prompt, _ := metric(string(b), "vllm:prompt_tokens_total")
	gen, _ := metric(string(b), "vllm:generation_tokens_total")
	if prompt != 82 || gen != 4 || steps != prompt+gen {
		t.Errorf("step tokens %v, prompt %v, generated %v; want 86 = 82 + 4", steps, prompt, gen)
	}
}

// The SGLang flavour publishes the same cache as cache_hit_rate: of the
// 82 tokens queried by the two prompts, 32 were hit.
func TestEmulatorSGLangCacheHitRate(t *testing.T) {
	_, url := startTestEmu(t, Config{StepTime: time.Millisecond, CoarseTiming: true, Engine: EngineSGLang})
	b := sharedPrompts(t, url)
	var r float64
	ok := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "sglang:cache_hit_rate{") {
			f := strings.Fields(l)
			_, err := fmt.Sscan(f[len(f)-1], &r)
			ok = err == nil
		}
	}
	if want := 32.0 / 82; !ok || math.Abs(r-want) > 1e-9 {
		t.Fatalf("cache_hit_rate %v (%v); want %v\n%s", r, ok, want, b)
	}
}

// sharedPrompts sends two prompts that share their first 40 one-token
// words and returns the emulator's /metrics text after them.
func sharedPrompts(t *testing.T, url string) []byte {
	t.Helper()
	var words []string
	for i := range 40 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	shared := strings.Join(words, " ")
	for _, last := range []string{"alpha", "beta"} {
		resp := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":%q,"max_tokens":2}`, shared+" "+last))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	return scrape(t, url)
}

// scrape is the emulator's /metrics text.
func scrape(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return b
}

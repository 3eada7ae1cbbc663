package servermetrics

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Every fixture is parsed; each checks the figures it holds.
func TestParseFixtures(t *testing.T) {
	t.Run("02 docs sample, no engine label", func(t *testing.T) {
		s := parseFile(t, "vllm-metrics-02-v1-docs-design-sample.txt")
		if !s.Available() || s.Running != 8 || s.GenerationTokens != 27453 || s.Engines != 1 {
			t.Fatalf("got %+v", s)
		}
		if s.KVCacheMetric != "" || s.HasSpec {
			t.Fatalf("no KV or spec series in this sample: %+v", s)
		}
		// "$ curl", "..." and the elided label set are not exposition text.
		if s.Skipped < 3 {
			t.Fatalf("skipped %d lines, want the prompt and elision lines counted", s.Skipped)
		}
	})
	t.Run("03 early V1, old KV name", func(t *testing.T) {
		s := parseFile(t, "vllm-metrics-03-v0.8-v1early-prodstack-qwen25coder32b.txt")
		want := []string{nameKVCacheOld, nameRunning, nameWaiting}
		if !reflect.DeepEqual(s.Found, want) {
			t.Fatalf("found %v, want %v", s.Found, want)
		}
		if s.KVCacheMetric != nameKVCacheOld || s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("05 Prometheus UI copy is not exposition text", func(t *testing.T) {
		s := parseFile(t, "vllm-metrics-05-v0.10-specdecode-dp8-prometheus-ui.txt")
		if s.Available() {
			t.Fatalf("a web-UI table has no usable samples, got %+v", s)
		}
		if s.Skipped != 7 {
			t.Fatalf("skipped %d, want the 7 table rows", s.Skipped)
		}
	})
	t.Run("06 source code excerpt", func(t *testing.T) {
		s := parseFile(t, "vllm-metrics-06-v1-source-definitions-renames.txt")
		if s.Available() {
			t.Fatalf("Python source yields no samples, got %+v", s)
		}
	})
	t.Run("constructed 0.11 DP=2 with spec decode", func(t *testing.T) {
		s := parseFile(t, "constructed-v0.11-dp2-specdecode.txt")
		if s.Running != 125 || s.Waiting != 3 || s.Preemptions != 7 || s.GenerationTokens != 2e6 {
			t.Fatalf("sums over engines wrong: %+v", s)
		}
		if s.KVCacheUsage != 0.5 || s.KVCacheMetric != nameKVCache {
			t.Fatalf("KV usage should be the fullest engine under the new name: %+v", s)
		}
		if s.Engines != 2 || s.Skipped != 0 {
			t.Fatalf("engines %d skipped %d", s.Engines, s.Skipped)
		}
		if a := s.SpecAcceptance(); a == nil || !near(*a, 0.6) {
			t.Fatalf("spec acceptance %v, want 0.6", a)
		}
	})
}

func TestParseOldKVNameOnly(t *testing.T) {
	in := "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.25\nvllm:gpu_cache_usage_perc{engine=\"1\"} 0.75\n"
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.KVCacheUsage != 0.75 || s.KVCacheMetric != nameKVCacheOld {
		t.Fatalf("got %+v", s)
	}
}

func TestParseOpenMetricsStyleCounterName(t *testing.T) {
	// A counter declared without _total (OpenMetrics naming) still counts.
	in := "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens 42\n"
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.GenerationTokens != 42 {
		t.Fatalf("got %+v", s)
	}
}

func TestParseSkipsNaNAndBrokenLines(t *testing.T) {
	in := "vllm:num_requests_running 3\nvllm:num_requests_running{engine=\"1\"} NaN\n" +
		"vllm:num_requests_waiting{engine=\"0\"} oops\nvllm:num_requests_waiting{engine=\"1\"} 2\n"
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Running != 3 || s.Waiting != 2 || s.Skipped != 1 {
		t.Fatalf("got %+v", s)
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParseReaderError(t *testing.T) {
	if _, err := Parse(failReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("want the reader's error, got %v", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("# filler comment line\n"), MaxBody/22+10)
	if _, err := Parse(bytes.NewReader(big)); err == nil {
		t.Fatal("want an error over MaxBody")
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("vllm:num_requests_running{engine=\"0\" 1\n"))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"a\"} 1\n"))
	f.Add([]byte("\xff\xfe{{{{\n\n\r\n"))
	f.Add([]byte(sglangText))
	f.Add([]byte("sglang_token_usage{dp_rank=\"1\"} 1e308\nsglang:token_usage{dp_rank=\"2\"} 1e308\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("Parse errs only on the reader: %v", err)
		}
		figures := []float64{s.Running, s.Waiting, s.KVCacheUsage, s.Preemptions, s.GenerationTokens}
		for _, p := range []*float64{s.GenThroughput, s.CacheHitRate, s.KVCacheTokens, s.Retracted, s.SpecAcceptLength, s.SpecAcceptRateNow} {
			if p != nil {
				figures = append(figures, *p)
			}
		}
		counts := []float64{s.Running, s.Waiting, s.Preemptions, s.GenerationTokens, s.SpecAccepted, s.SpecDraft, s.PromptTokens, s.Steps,
			s.StepTokens, s.Requests, s.PrefixQueries, s.PrefixHits, s.SpecDrafts}
		for _, v := range append(figures, counts...) {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("figure %g in %+v", v, s)
			}
		}
		for _, v := range counts {
			if v > maxCount {
				t.Fatalf("count %g in %+v", v, s)
			}
		}
		if s.KVCacheUsage > 1 {
			t.Fatalf("KV cache usage %g", s.KVCacheUsage)
		}
		if len(s.Dropped) > 2*maxDrops {
			t.Fatalf("%d dropped", len(s.Dropped))
		}
	})
}

// A negative counter or gauge is left out, said; a sum over engines that
// overflows is missing, said, never "running: 0".
func TestParseDropsImpossibleSamples(t *testing.T) {
	s, err := Parse(strings.NewReader("vllm:num_requests_running{engine=\"0\"} 1e308\nvllm:num_requests_running{engine=\"1\"} 1e308\n" +
		"vllm:num_requests_waiting 3\nvllm:num_preemptions_total -5\nvllm:generation_tokens_total 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := FiguresOf("m.txt", s)
	if !slices.Contains(f.Missing, "running") || !slices.Contains(f.Missing, "preemptions_total") || s.Waiting != 3 || s.GenerationTokens != 100 {
		t.Fatalf("missing %v, snapshot %+v", f.Missing, s)
	}
	all := strings.Join(s.Dropped, "\n")
	if !strings.Contains(all, "vllm:num_requests_running: the sum over engines is past any count") ||
		!strings.Contains(all, "vllm:num_preemptions_total: a sample of -5") {
		t.Fatalf("dropped %q", s.Dropped)
	}
	b, err := f.MarshalJSON()
	if err != nil || !strings.Contains(string(b), `"running":null`) {
		t.Fatalf("%s %v", b, err)
	}
}

// BenchmarkParse is one scrape's parse of a two-engine 0.11-style text.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/constructed-v0.11-dp2-specdecode.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseStepMix: the engine steps and their tokens are the count and sum
// of vllm:iteration_tokens_total, summed over engines, beside the prompt
// tokens counter.
func TestParseStepMix(t *testing.T) {
	text := `# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0"} 3
vllm:iteration_tokens_total_bucket{engine="0",le="+Inf"} 10
vllm:iteration_tokens_total_count{engine="0"} 10
vllm:iteration_tokens_total_sum{engine="0"} 400
vllm:iteration_tokens_total_bucket{engine="1",le="+Inf"} 5
vllm:iteration_tokens_total_count{engine="1"} 5
vllm:iteration_tokens_total_sum{engine="1"} 100
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0"} 256
`
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasSteps || s.Steps != 15 || s.StepTokens != 500 || s.PromptTokens != 256 || s.Engines != 2 {
		t.Fatalf("got %+v", s)
	}
}

// Package servermetrics reads a vLLM or SGLang server's Prometheus /metrics
// into the figures the macro phase shows beside the client's own: running
// and waiting requests, KV-cache usage, preemptions, generation tokens and,
// when the server drafts speculatively, the draft acceptance. Parsing is
// done by github.com/prometheus/common/expfmt; this package only picks the
// serving series out, tells which engine wrote them (vllm: or sglang:
// names), sums them over engines (data-parallel ranks) and knows the names
// each era of each engine used.
package servermetrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxBody is the largest /metrics text read (a real vLLM server sends a few
// hundred KB at most).
const MaxBody = 32 << 20

// Metric names, newest first where vLLM renamed one.
const (
	nameRunning     = "vllm:num_requests_running"
	nameWaiting     = "vllm:num_requests_waiting"
	nameKVCache     = "vllm:kv_cache_usage_perc"  // v0.9.2 and later
	nameKVCacheOld  = "vllm:gpu_cache_usage_perc" // until v0.11 (hidden), removed in v0.12
	namePreemptions = "vllm:num_preemptions_total"
	nameGenTokens   = "vllm:generation_tokens_total"
	nameSpecAccept  = "vllm:spec_decode_num_accepted_tokens_total"
	nameSpecDraft   = "vllm:spec_decode_num_draft_tokens_total"
	namePromptTok   = "vllm:prompt_tokens_total"
	nameIterTokens  = "vllm:iteration_tokens_total" // a histogram: count is steps, sum tokens
	nameRequests    = "vllm:request_success_total"  // finished requests, one series per finish reason
	// The per-request prompt-length histogram: its sum is the prompt
	// tokens of finished requests, read when the counter is absent.
	namePromptHist = "vllm:request_prompt_tokens"
)

// Snapshot is one /metrics text reduced to the figures profdeck shows.
// Gauges are current values and counters are totals since the server
// started; rates need two snapshots (see Scraper).
type Snapshot struct {
	// Running and Waiting are requests, summed over engines.
	Running float64 `json:"running"`
	Waiting float64 `json:"waiting"`
	// KVCacheUsage is the fullest engine's KV-cache usage, 0..1 (a sum
	// of fractions would mean nothing).
	KVCacheUsage float64 `json:"kv_cache_usage"`
	// KVCacheMetric names the series KVCacheUsage came from (the name
	// changed in vLLM 0.9.2).
	KVCacheMetric string `json:"kv_cache_metric,omitempty"`
	// Preemptions and GenerationTokens are counter totals, summed.
	Preemptions      float64 `json:"preemptions_total"`
	GenerationTokens float64 `json:"generation_tokens_total"`
	// SpecAccepted and SpecDraft are the speculative-decoding token
	// counters; HasSpec says the server exposes them.
	SpecAccepted float64 `json:"spec_accepted_tokens_total,omitempty"`
	SpecDraft    float64 `json:"spec_draft_tokens_total,omitempty"`
	HasSpec      bool    `json:"spec_decode,omitempty"`
	// PromptTokens is the prefill tokens counter; Steps and StepTokens
	// the engine steps and the tokens they held (the count and sum of
	// vllm:iteration_tokens_total); HasSteps says the server exposes them.
	PromptTokens float64 `json:"prompt_tokens_total,omitempty"`
	Steps        float64 `json:"engine_steps_total,omitempty"`
	StepTokens   float64 `json:"engine_step_tokens_total,omitempty"`
	HasSteps     bool    `json:"engine_steps,omitempty"`
	// Requests is the finished requests counter, summed over finish
	// reasons and engines.
	Requests float64 `json:"requests_total,omitempty"`
	// PromptTokensMetric names the series PromptTokens came from: the
	// counter, or the prompt-length histogram's sum when the counter is
	// absent (it then counts finished requests' prompts only).
	PromptTokensMetric string `json:"prompt_tokens_metric,omitempty"`
	// Engines is the number of distinct engine labels seen (1 when the
	// server labels none).
	Engines int `json:"engines"`
	// Found lists the serving series that were present, sorted.
	Found []string `json:"found"`
	// Engine is the server the series came from: EngineVLLM or
	// EngineSGLang ("" when none was found).
	Engine string `json:"engine,omitempty"`
	// SGLang's own gauges, nil when the server has none: its generation
	// throughput (tokens/s over its last log interval, summed over
	// data-parallel ranks), prefix-cache hit rate (0..1), KV pool size in
	// tokens, requests retracted (preempted) now, and speculative
	// decoding's mean accept length and accept rate.
	GenThroughput     *float64 `json:"gen_throughput,omitempty"`
	CacheHitRate      *float64 `json:"cache_hit_rate,omitempty"`
	KVCacheTokens     *float64 `json:"kv_cache_tokens,omitempty"`
	Retracted         *float64 `json:"retracted,omitempty"`
	SpecAcceptLength  *float64 `json:"spec_accept_length,omitempty"`
	SpecAcceptRateNow *float64 `json:"spec_accept_rate_now,omitempty"`
	// PrefixQueries and PrefixHits are vLLM's prefix-cache counters
	// (tokens queried, tokens found cached), HasPrefix says it has them;
	// SpecDrafts counts speculative drafts (HasDrafts: it has the counter).
	PrefixQueries float64 `json:"prefix_cache_queries_total,omitempty"`
	PrefixHits    float64 `json:"prefix_cache_hits_total,omitempty"`
	HasPrefix     bool    `json:"prefix_cache,omitempty"`
	SpecDrafts    float64 `json:"spec_drafts_total,omitempty"`
	HasDrafts     bool    `json:"spec_drafts,omitempty"`
	// Skipped counts lines that were not valid exposition text and were
	// left out (a clean /metrics has none).
	Skipped int `json:"skipped_lines,omitempty"`
	// Dropped says the samples no server sends that were left out: a
	// negative counter or gauge, a sum over engines past any count (the
	// figure is then missing, not 0).
	Dropped []string `json:"dropped,omitempty"`
}

// Available reports whether any vLLM or SGLang serving figure was found.
func (s Snapshot) Available() bool { return len(s.Found) > 0 }

// SpecAcceptance is accepted over drafted tokens since the server started,
// or nil without speculative decoding or drafts.
func (s Snapshot) SpecAcceptance() *float64 {
	if !s.HasSpec || s.SpecDraft <= 0 {
		return nil
	}
	v := s.SpecAccepted / s.SpecDraft
	return &v
}

// Parse reads Prometheus text exposition and reduces it to a Snapshot.
// Lines that are not valid exposition text are skipped and counted, so a
// copy with shell prompts or elisions still yields what it holds. The only
// errors are a failing reader and a body over MaxBody.
func Parse(r io.Reader) (Snapshot, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading metrics: %w", err)
	}
	if len(data) > MaxBody {
		return Snapshot{}, fmt.Errorf("metrics text is over %d MiB", MaxBody>>20)
	}
	fams, skipped := parseTolerant(data)
	s := reduce(fams)
	s.Skipped = skipped
	return s, nil
}

// parseTolerant parses data with expfmt; on a syntax error it keeps what was
// parsed, skips the offending line and carries on from the next one.
func parseTolerant(data []byte) ([]map[string]*dto.MetricFamily, int) {
	var out []map[string]*dto.MetricFamily
	skipped := 0
	for len(data) > 0 {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
		if len(fams) > 0 {
			out = append(out, fams)
		}
		var pe expfmt.ParseError
		if err == nil || !errors.As(err, &pe) || pe.Line < 1 {
			break
		}
		skipped++
		data = afterLine(data, pe.Line)
	}
	return out, skipped
}

// afterLine returns data after its n-th line (1-based).
func afterLine(data []byte, n int) []byte {
	for i := 0; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return nil
		}
		data = data[j+1:]
	}
	return data
}

// reduce picks the vLLM (else SGLang) figures out of the parsed families.
func reduce(chunks []map[string]*dto.MetricFamily) Snapshot {
	var s Snapshot
	a := &vllmSums{s: &s, engines: map[string]bool{}, found: map[string]bool{}, kvNew: math.NaN(), kvOld: math.NaN()}
	var sg sglangFigures
	for _, fams := range chunks {
		for name, mf := range fams {
			if key, ok := sglangName(name, mf); ok {
				for _, m := range mf.GetMetric() {
					sg.add(key, m)
				}
				continue
			}
			key := canonical(name, mf)
			for _, m := range mf.GetMetric() {
				a.add(key, m)
			}
		}
	}
	switch {
	case a.found[namePromptTok]:
		s.PromptTokensMetric = namePromptTok
	case a.found[namePromptHist]:
		s.PromptTokens, s.PromptTokensMetric = a.promptHist, namePromptHist+"_sum"
	}
	switch {
	case !math.IsNaN(a.kvNew):
		s.KVCacheUsage, s.KVCacheMetric = a.kvNew, nameKVCache
	case !math.IsNaN(a.kvOld):
		s.KVCacheUsage, s.KVCacheMetric = a.kvOld, nameKVCacheOld
	}
	// Sums of absurd values can overflow (or pass any count a float
	// holds exactly); such a figure is missing, said, never 0.
	a.sig.fill(&s, a.found)
	for _, f := range []struct {
		v   *float64
		key string
	}{{&s.Running, nameRunning}, {&s.Waiting, nameWaiting}, {&s.Preemptions, namePreemptions}, {&s.GenerationTokens, nameGenTokens},
		{&s.SpecAccepted, nameSpecAccept}, {&s.SpecDraft, nameSpecDraft}, {&s.PromptTokens, namePromptTok}, {&s.Steps, nameIterTokens},
		{&s.StepTokens, nameIterTokens}, {&s.Requests, nameRequests}, {&s.PrefixQueries, namePrefixQueries},
		{&s.PrefixHits, namePrefixHits}, {&s.SpecDrafts, nameSpecDrafts}} {
		if math.IsInf(*f.v, 0) || *f.v > maxCount {
			*f.v = 0
			if a.found[f.key] {
				delete(a.found, f.key)
				a.drops.say(fmt.Sprintf("%s: the sum over engines is past any count (%g): missing", f.key, float64(maxCount)))
			}
		}
	}
	s.HasSpec = a.found[nameSpecDraft]
	s.HasSteps = a.found[nameIterTokens]
	for k := range a.found {
		s.Found = append(s.Found, k)
	}
	sort.Strings(s.Found)
	delete(a.engines, "") // series without an engine label belong to the one engine there is
	if len(a.found) > 0 {
		s.Engines = max(1, len(a.engines))
		s.Engine = EngineVLLM
	} else {
		sg.fill(&s)
		sort.Strings(s.Found)
	}
	s.Dropped = append(a.drops.list(), sg.drops.list()...)
	return s
}

// vllmSums adds up the samples of vLLM's families into a Snapshot, with
// what reduce decides at the end: the families and engines seen, the two
// KV cache gauges and the prompt histogram's sum.
type vllmSums struct {
	s                        *Snapshot
	engines, found           map[string]bool
	kvNew, kvOld, promptHist float64
	sig                      signals
	drops                    drops
}

// add folds one sample of the family key in.
func (a *vllmSums) add(key string, m *dto.Metric) {
	s := a.s
	if h := m.GetHistogram(); h != nil && key == namePromptHist {
		if sum := h.GetSampleSum(); !math.IsNaN(sum) && !math.IsInf(sum, 0) {
			a.promptHist += sum
			a.found[key] = true
			a.engines[engineOf(m)] = true
		}
		return
	}
	if h := m.GetHistogram(); h != nil && key == nameIterTokens {
		if n, sum := float64(h.GetSampleCount()), h.GetSampleSum(); !math.IsNaN(sum) && !math.IsInf(sum, 0) {
			s.Steps += n
			s.StepTokens += sum
			a.found[key] = true
			a.engines[engineOf(m)] = true
		}
		return
	}
	v, ok := value(m)
	if !ok {
		if servingName(key) {
			a.drops.sample(key, m)
		}
		return
	}
	switch key {
	case nameRunning:
		s.Running += v
	case nameWaiting:
		s.Waiting += v
	case nameKVCache, nameKVCacheOld:
		if v > 1 {
			a.drops.say(fmt.Sprintf("%s: %g is no share of the KV cache (0 to 1): left out", key, v))
			return
		}
		if key == nameKVCache {
			a.kvNew = nanMax(a.kvNew, v)
		} else {
			a.kvOld = nanMax(a.kvOld, v)
		}
	case namePreemptions:
		s.Preemptions += v
	case nameGenTokens:
		s.GenerationTokens += v
	case nameSpecAccept:
		s.SpecAccepted += v
	case nameSpecDraft:
		s.SpecDraft += v
	case namePromptTok:
		s.PromptTokens += v
	case nameRequests:
		s.Requests += v
	case namePrefixQueries:
		a.sig.queries += v
	case namePrefixHits:
		a.sig.hits += v
	case namePrefixQueriesOld:
		a.sig.queriesOld += v
	case namePrefixHitsOld:
		a.sig.hitsOld += v
	case nameSpecDrafts:
		s.SpecDrafts += v
	default:
		return
	}
	a.found[key] = true
	a.engines[engineOf(m)] = true
}

// canonical maps a family name to the names above: counters may come
// without their _total suffix (OpenMetrics style).
func canonical(name string, mf *dto.MetricFamily) string {
	if mf.GetType() == dto.MetricType_COUNTER && len(name) > 0 && !hasSuffix(name, "_total") {
		return name + "_total"
	}
	return name
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// value returns a sample's value; false when the line that created it was
// cut short, or the value is not a finite number.
func value(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.GetGauge() != nil:
		v = m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		v = m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false // no counter or gauge read here is below 0
	}
	return v, true
}

func engineOf(m *dto.Metric) string { return label(m, "engine") }

func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || b > a {
		return b
	}
	return a
}

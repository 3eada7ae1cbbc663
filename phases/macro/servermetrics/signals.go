package servermetrics

import (
	"math"

	"github.com/profdeck/profdeck/phases"
)

// vLLM's prefix-cache and speculative-decoding counters, read beside the
// serving figures: the prefix cache's queried and hit tokens (named
// vllm:gpu_prefix_cache_* in V1 until 0.9.2, hidden in 0.11, removed in
// 0.12) and the number of drafts (for the mean accepted length, 1 +
// accepted tokens ÷ drafts, as vLLM's spec_decode/metrics.py defines it).
const (
	namePrefixQueries    = "vllm:prefix_cache_queries_total"
	namePrefixHits       = "vllm:prefix_cache_hits_total"
	namePrefixQueriesOld = "vllm:gpu_prefix_cache_queries_total"
	namePrefixHitsOld    = "vllm:gpu_prefix_cache_hits_total"
	nameSpecDrafts       = "vllm:spec_decode_num_drafts_total"
)

// signals are the prefix-cache counters above as one text sums them
// (vllmSums.add sums them); the old names count only when the new ones are
// absent.
type signals struct {
	queries, hits, queriesOld, hitsOld float64
}

// fill sets the snapshot's prefix-cache counters from what was found.
func (g *signals) fill(s *Snapshot, found map[string]bool) {
	switch {
	case found[namePrefixQueries]:
		s.PrefixQueries, s.PrefixHits, s.HasPrefix = g.queries, g.hits, true
	case found[namePrefixQueriesOld]:
		s.PrefixQueries, s.PrefixHits, s.HasPrefix = g.queriesOld, g.hitsOld, true
	}
	s.HasDrafts = found[nameSpecDrafts]
}

// levelSignals sets a level's prefix-cache hit rate, speculative
// decoding's accepted length (and, from SGLang's gauge, acceptance) and
// SGLang's retracted requests from its available scrapes: counter deltas
// between consecutive scrapes where the server counts, the mean of its
// gauges where it does not.
func levelSignals(out *phases.ServerLevel, avail []phases.ServerStats) {
	var queries, hits, drafts, accepted float64
	var hasPrefix, hasDrafts bool
	var hitG, lenG, rateG gaugeMean
	for i, s := range avail {
		if out.Engine == "" {
			out.Engine = s.Engine
		}
		hitG.add(s.CacheHitRate)
		lenG.add(s.SpecAcceptLength)
		if !s.HasSpec {
			rateG.add(s.SpecAcceptRate)
		}
		if s.Retracted != nil {
			out.MaxRetracted = new(max(*s.Retracted, valueOr(out.MaxRetracted, 0)))
		}
		if i == 0 {
			continue
		}
		p := avail[i-1]
		if s.HasPrefix && p.HasPrefix {
			hasPrefix = true
			queries += delta(p.PrefixQueriesTotal, s.PrefixQueriesTotal)
			hits += delta(p.PrefixHitsTotal, s.PrefixHitsTotal)
		}
		if s.HasDrafts && p.HasDrafts && s.HasSpec && p.HasSpec {
			hasDrafts = true
			drafts += delta(p.SpecDraftsTotal, s.SpecDraftsTotal)
			accepted += delta(p.SpecAcceptedTotal, s.SpecAcceptedTotal)
		}
	}
	if hasPrefix {
		setSome(&out.PrefixCacheHitRate, hitRate(hits, queries))
	} else {
		out.PrefixCacheHitRate = hitG.mean()
	}
	if hasDrafts {
		setSome(&out.SpecAcceptLength, acceptLength(accepted, drafts))
	} else {
		out.SpecAcceptLength = lenG.mean()
	}
	if out.SpecAcceptRate == nil {
		out.SpecAcceptRate = rateG.mean()
	}
}

// gaugeMean is the mean of a gauge over the scrapes that had it.
type gaugeMean struct {
	sum float64
	n   int
}

func (g *gaugeMean) add(v *float64) {
	if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
		g.sum += *v
		g.n++
	}
}

func (g gaugeMean) mean() *float64 {
	if g.n == 0 {
		return nil
	}
	return new(g.sum / float64(g.n))
}

func valueOr(p *float64, v float64) float64 {
	if p == nil {
		return v
	}
	return *p
}

// liveSignals sets one second's prefix-cache hit rate and mean accepted
// length from vLLM's counters (SGLang publishes both as gauges).
func liveSignals(st *phases.ServerStats, cur Snapshot, prev *Snapshot) {
	if cur.HasPrefix && prev.HasPrefix {
		setSome(&st.CacheHitRate, hitRate(delta(prev.PrefixHits, cur.PrefixHits), delta(prev.PrefixQueries, cur.PrefixQueries)))
	}
	if cur.HasDrafts && prev.HasDrafts && cur.HasSpec {
		setSome(&st.SpecAcceptLength, acceptLength(delta(prev.SpecAccepted, cur.SpecAccepted), delta(prev.SpecDrafts, cur.SpecDrafts)))
	}
}

// The formulas over a span's counter deltas, for one second (liveSignals,
// the scrape) and for a whole level (levelSignals, the summary): each is
// nil when the span saw nothing to divide by.

// hitRate is the prefix cache's hit rate: hit tokens ÷ queried tokens, at
// most 1.
func hitRate(hits, queries float64) *float64 {
	if queries > 0 {
		return new(min(hits/queries, 1))
	}
	return nil
}

// acceptLength is speculative decoding's mean accepted length, 1 +
// accepted tokens ÷ drafts, as vLLM's spec_decode/metrics.py defines it.
func acceptLength(accepted, drafts float64) *float64 {
	if drafts > 0 {
		return new(1 + accepted/drafts)
	}
	return nil
}

// acceptRate is speculative decoding's acceptance: accepted tokens ÷
// draft tokens.
func acceptRate(accepted, draftTokens float64) *float64 {
	if draftTokens > 0 {
		return new(accepted / draftTokens)
	}
	return nil
}

// setSome sets *dst to v unless v is nil.
func setSome(dst **float64, v *float64) {
	if v != nil {
		*dst = v
	}
}

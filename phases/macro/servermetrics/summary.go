package servermetrics

import "github.com/profdeck/profdeck/phases"

// Summarize reduces one level's scrapes to the server's side of that level:
// mean running and waiting requests, the fullest KV cache, the preemptions
// and generation tokens per second over the level (exact counter deltas
// between the first and last available scrape) and the speculative
// acceptance over the level. It returns nil for no samples, and
// Available false when none of them could be read.
func Summarize(samples []phases.ServerStats) *phases.ServerLevel {
	if len(samples) == 0 {
		return nil
	}
	out := &phases.ServerLevel{Samples: len(samples)}
	var avail []phases.ServerStats
	for _, s := range samples {
		if s.Available {
			avail = append(avail, s)
		} else if out.Note == "" {
			out.Note = s.Note
		}
	}
	if len(avail) == 0 {
		if out.Note == "" {
			out.Note = Unavailable
		}
		return out
	}
	if len(avail) == len(samples) {
		out.Note = ""
	}
	out.Available = true
	var gen, acc, draft, rateSum float64
	var spec bool
	for i, s := range avail {
		out.MeanRunning += s.Running
		out.MeanWaiting += s.Waiting
		out.MaxWaiting = max(out.MaxWaiting, s.Waiting)
		out.MaxKVCacheUsage = max(out.MaxKVCacheUsage, s.KVCacheUsage)
		rateSum += s.GenTokS
		if i > 0 {
			p := avail[i-1]
			out.Preemptions += delta(p.Preemptions, s.Preemptions)
			gen += delta(p.GenTokensTotal, s.GenTokensTotal)
			if s.HasSpec && p.HasSpec {
				spec = true
				acc += delta(p.SpecAcceptedTotal, s.SpecAcceptedTotal)
				draft += delta(p.SpecDraftTotal, s.SpecDraftTotal)
			}
		}
	}
	n := float64(len(avail))
	out.MeanRunning /= n
	out.MeanWaiting /= n
	first, last := avail[0], avail[len(avail)-1]
	if span := last.At.Sub(first.At).Seconds(); span > 0 && (gen > 0 || rateSum == 0) {
		out.GenerationTokS = gen / span
	} else {
		// No timestamps to take a delta over, or no counter (an SGLang
		// server's own throughput gauge): the mean of the per-scrape rates.
		out.GenerationTokS = rateSum / n
	}
	if spec {
		out.SpecAcceptRate = acceptRate(acc, draft)
	}
	levelSignals(out, avail)
	return out
}

package macro

import (
	"context"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// scrapeLoop polls the scraper once a second until ctx ends, emitting each
// scrape and keeping it for the current level's summary. A failed scrape
// (no /metrics, a 404) is recorded as unavailable, never an error.
func (r *runner) scrapeLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		r.scrapeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *runner) scrapeOnce(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	st, err := r.cfg.Scraper.Scrape(sctx, time.Now())
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		st = phases.ServerStats{Available: false, Note: oneLine(err.Error())}
	}
	r.srvMu.Lock()
	r.srvSamples = append(r.srvSamples, st)
	r.srvMu.Unlock()
	r.em.Emit(ctx, phases.KindServerStats, &st)
}

// serverLevel summarises the level's scrapes (nil without a scraper).
func (r *runner) serverLevel(ctx context.Context) *phases.ServerLevel {
	if r.cfg.Scraper == nil {
		return nil
	}
	r.srvMu.Lock()
	samples := append([]phases.ServerStats(nil), r.srvSamples...)
	r.srvMu.Unlock()
	sl := &phases.ServerLevel{}
	var n, nSpec int
	var firstPre, lastPre float64
	var spec float64
	for _, st := range samples {
		if !st.Available {
			continue
		}
		if n == 0 {
			firstPre = st.Preemptions
		}
		lastPre = st.Preemptions
		n++
		sl.MeanRunning += st.Running
		sl.MeanWaiting += st.Waiting
		sl.GenerationTokS += st.GenTokS
		if st.KVCacheUsage > sl.MaxKVCacheUsage {
			sl.MaxKVCacheUsage = st.KVCacheUsage
		}
		if st.SpecAcceptRate != nil {
			spec += *st.SpecAcceptRate
			nSpec++
		}
	}
	if n == 0 {
		return sl
	}
	sl.Available = true
	sl.MeanRunning /= float64(n)
	sl.MeanWaiting /= float64(n)
	sl.GenerationTokS /= float64(n)
	sl.Preemptions = lastPre - firstPre
	if nSpec > 0 {
		v := spec / float64(nSpec)
		sl.SpecAcceptRate = &v
	}
	return sl
}

package macro

import (
	"context"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
)

// scrapeLoop polls the scraper once a second until ctx ends, emitting each
// scrape and keeping it for the current level's summary. A failed scrape
// (no /metrics, a 404) is recorded as unavailable, never an error.
func (r *runner) scrapeLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	r.scrapeOnce(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.scrapeOnce(ctx)
		}
	}
}

func (r *runner) scrapeOnce(ctx context.Context) phases.ServerStats {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	now := time.Now()
	st, err := r.cfg.Scraper.Scrape(sctx, now)
	cancel()
	if ctx.Err() != nil {
		return phases.ServerStats{At: now, Note: servermetrics.Unavailable}
	}
	if err != nil {
		st.Available = false
		if st.Note == "" {
			st.Note = oneLine(err.Error())
		}
	}
	if st.At.IsZero() {
		st.At = now
	}
	r.srvMu.Lock()
	r.srvSamples = append(r.srvSamples, st)
	r.srvMu.Unlock()
	r.em.Emit(ctx, phases.KindMacroServer, &st)
	return st
}

// serverLevel summarises the level's scrapes (nil without a scraper) and
// how its scheduler was occupied inside w. It takes one more scrape first,
// so a level shorter than a second still has the server's side.
func (r *runner) serverLevel(ctx context.Context, w *window) *phases.ServerLevel {
	if r.cfg.Scraper == nil {
		return nil
	}
	if ctx.Err() == nil {
		r.scrapeOnce(ctx)
	}
	r.srvMu.Lock()
	samples := append([]phases.ServerStats(nil), r.srvSamples...)
	r.srvMu.Unlock()
	sl := servermetrics.Summarize(samples)
	if sl == nil {
		sl = &phases.ServerLevel{Note: servermetrics.Unavailable}
	}
	w.scheduler(sl, samples)
	return sl
}

// gpuEnd records what the GPU sampler read, and says its notes (the
// energy estimate, a missing NVLink) among the sweep's warnings.
func (r *runner) gpuEnd(res *Result) {
	src := r.cfg.GPU.Source()
	if src.Host == "" {
		return
	}
	res.GPU = &src
	r.warns.sweep = append(r.warns.sweep, src.Notes...)
}

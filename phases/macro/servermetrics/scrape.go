package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Unavailable is the note shown when the server has no /metrics to read.
const Unavailable = "server metrics unavailable"

// DefaultTimeout bounds one scrape when the caller's context has no sooner
// deadline; the engine scrapes once a second.
const DefaultTimeout = 2 * time.Second

// Scraper reads a server's /metrics and turns consecutive reads into rates.
// It is safe for use by one goroutine at a time; a mutex guards it anyway.
type Scraper struct {
	url     string
	client  *http.Client
	Timeout time.Duration

	mu   sync.Mutex
	past []stamped // the last few scrapes, oldest first
}

// stamped is one scrape and when it was taken.
type stamped struct {
	snap Snapshot
	at   time.Time
}

// MinRateInterval is the shortest span a rate is taken over: a scrape
// soon after another (a level's edge) is rated against an older one, as a
// rate over a few milliseconds catches one engine step or none.
const MinRateInterval = 500 * time.Millisecond

// NewScraper returns a scraper of url (the full /metrics URL). A nil client
// uses http.DefaultClient; pass one whose transport dials through the GPU
// host to reach a server bound to its localhost.
func NewScraper(url string, client *http.Client) *Scraper {
	if client == nil {
		client = http.DefaultClient
	}
	return &Scraper{url: url, client: client, Timeout: DefaultTimeout}
}

// URL is the address scraped.
func (s *Scraper) URL() string { return s.url }

// Scrape reads /metrics once. A server with no /metrics (404, connection
// refused: normal while it loads) gives Available false with the note
// "server metrics unavailable" and a nil error. Other failures (a 5xx, a
// timeout, a body with no vLLM series) also give Available false with a
// note that says why, and an error; the stats are fit to show either way.
func (s *Scraper) Scrape(ctx context.Context, now time.Time) (phases.ServerStats, error) {
	start := time.Now()
	snap, answered, err := s.fetch(ctx)
	if err != nil {
		if isAbsent(err) {
			return phases.ServerStats{At: now, Note: Unavailable}, nil
		}
		return phases.ServerStats{At: now, Note: Unavailable + ": " + err.Error()}, fmt.Errorf("scraping %s: %w", s.url, err)
	}
	if !snap.Available() {
		return phases.ServerStats{At: now, Note: Unavailable + ": no vLLM series"},
			fmt.Errorf("scraping %s: no vLLM series in the response", s.url)
	}
	// The server read its counters when it answered, not when the scrape
	// was asked for: on a busy machine the answer comes tens of
	// milliseconds later, and a rate over half a second between two
	// unequally late scrapes is off by as much.
	if !answered.IsZero() {
		now = now.Add(answered.Sub(start))
	}
	s.mu.Lock()
	var prev *Snapshot
	var prevAt time.Time
	for i := len(s.past) - 1; i >= 0; i-- {
		if p := s.past[i]; now.Sub(p.at) >= MinRateInterval || i == 0 {
			prev, prevAt = &p.snap, p.at
			break
		}
	}
	s.past = append(s.past, stamped{snap, now})
	if len(s.past) > 4 {
		s.past = append(s.past[:0], s.past[len(s.past)-4:]...)
	}
	s.mu.Unlock()
	return Stats(snap, prev, now.Sub(prevAt), now), nil
}

// Stats turns a snapshot (and the previous one, taken dt earlier, or nil)
// into the figures shown for one second.
func Stats(cur Snapshot, prev *Snapshot, dt time.Duration, now time.Time) phases.ServerStats {
	st := phases.ServerStats{
		Available:          true,
		At:                 now,
		Running:            cur.Running,
		Waiting:            cur.Waiting,
		KVCacheUsage:       cur.KVCacheUsage,
		Preemptions:        cur.Preemptions,
		GenTokensTotal:     cur.GenerationTokens,
		SpecAcceptedTotal:  cur.SpecAccepted,
		SpecDraftTotal:     cur.SpecDraft,
		HasSpec:            cur.HasSpec,
		Engines:            cur.Engines,
		PromptTokensTotal:  cur.PromptTokens,
		StepsTotal:         cur.Steps,
		StepTokensTotal:    cur.StepTokens,
		HasSteps:           cur.HasSteps,
		Engine:             cur.Engine,
		CacheHitRate:       cur.CacheHitRate,
		PrefixQueriesTotal: cur.PrefixQueries,
		PrefixHitsTotal:    cur.PrefixHits,
		HasPrefix:          cur.HasPrefix,
		SpecDraftsTotal:    cur.SpecDrafts,
		HasDrafts:          cur.HasDrafts,
		SpecAcceptLength:   cur.SpecAcceptLength,
		Retracted:          cur.Retracted,
	}
	if !cur.HasSpec && cur.SpecAcceptRateNow != nil {
		st.SpecAcceptRate = cur.SpecAcceptRateNow // SGLang's own gauge
	}
	if !cur.hasGenCounter() && cur.GenThroughput != nil {
		// SGLang without its token counters: the throughput its
		// scheduler measured over its own last log interval.
		st.GenTokS = *cur.GenThroughput
	}
	if prev == nil || dt <= 0 {
		return st
	}
	sec := dt.Seconds()
	st.IntervalS = sec
	if cur.hasGenCounter() {
		st.GenTokS = delta(prev.GenerationTokens, cur.GenerationTokens) / sec
	}
	if cur.HasSpec {
		setSome(&st.SpecAcceptRate, acceptRate(delta(prev.SpecAccepted, cur.SpecAccepted), delta(prev.SpecDraft, cur.SpecDraft)))
	}
	liveSignals(&st, cur, prev)
	return st
}

// hasGenCounter reports whether the text had a generation-tokens counter.
func (s Snapshot) hasGenCounter() bool {
	for _, f := range s.Found {
		if f == nameGenTokens || f == SGLangGenTokens {
			return true
		}
	}
	return false
}

// delta is a counter's increase; a counter that went down was reset (the
// server restarted), so its increase is its new value.
func delta(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

type statusError struct{ code int }

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// fetch reads /metrics once; answered is when the response's headers came.
func (s *Scraper) fetch(ctx context.Context) (snap Snapshot, answered time.Time, err error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return Snapshot{}, answered, err
	}
	// Ask for the classic text format: it is what expfmt's text parser reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := s.client.Do(req)
	answered = time.Now()
	if err != nil {
		return Snapshot{}, answered, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, answered, statusError{resp.StatusCode}
	}
	snap, err = Parse(resp.Body)
	return snap, answered, err
}

// isAbsent reports whether err means "there is no /metrics here (yet)".
func isAbsent(err error) bool {
	var se statusError
	if errors.As(err, &se) {
		return se.code == http.StatusNotFound
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	// Through an SSH tunnel a refused connection arrives as a channel
	// rejection rather than ECONNREFUSED.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "connect failed")
}

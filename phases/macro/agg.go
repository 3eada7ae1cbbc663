package macro

import (
	"math"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/profdeck/profdeck/phases"
)

// Histograms hold microseconds from 1 µs to 1 hour at 3 significant digits:
// a fixed few tens of KiB each, whatever the number of requests.
const (
	histMin = 1
	histMax = int64(time.Hour / time.Microsecond)
	histSig = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSig) }

func recordDur(h *hdrhistogram.Histogram, d time.Duration, n int64) {
	us := int64(d / time.Microsecond)
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	_ = h.RecordValues(us, n)
}

// stats4 is mean/median/p90/p99 in milliseconds.
func stats4(h *hdrhistogram.Histogram) (mean, p50, p90, p99 float64) {
	if h.TotalCount() == 0 {
		return 0, 0, 0, 0
	}
	return h.Mean() / 1e3, float64(h.ValueAtQuantile(50)) / 1e3,
		float64(h.ValueAtQuantile(90)) / 1e3, float64(h.ValueAtQuantile(99)) / 1e3
}

// std is the histogram's standard deviation in ms (0 when empty).
func std(h *hdrhistogram.Histogram) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return h.StdDev() / 1e3
}

// levelAgg accumulates one level's measured requests in bounded memory.
type levelAgg struct {
	ttft, tpot, itl, e2el, lag *hdrhistogram.Histogram
	itlChunk                   *hdrhistogram.Histogram
	completed, failed          int
	failures                   map[string]int
	examples                   []phases.FailureExample // first seen first, at most maxExamples
	outputLen                  int                     // the output length asked for
	obs                        observed
	sources                    map[string]int
	inTok, outTok              int64
	first, last                time.Duration // measured window, since sweep start
	haveFirst                  bool
	maxLag                     time.Duration
	slo                        *slo // nil: no SLO
	sloc                       sloCount
	tokEvents, tokReads        int64        // of the completed requests' streams
	pcts                       Percentiles  // the percentiles asked for
	spans                      []decodeSpan // every completed request, warm-up too: the prefill wait
	spansCut                   bool         // more than maxSpans requests
	chunks                     int          // token chunks kept in spans
	chunksCut                  bool         // more than maxChunks: no stalls
}

func newLevelAgg() *levelAgg {
	return &levelAgg{ttft: newHist(), tpot: newHist(), itl: newHist(), e2el: newHist(), lag: newHist(),
		itlChunk: newHist(), failures: map[string]int{}, sources: map[string]int{}}
}

// maxExamples bounds the distinct errors a level keeps an example of.
const maxExamples = 8

// observed counts what the level's completed requests showed about the
// server, for its warnings.
type observed struct {
	chunks, tokenized int // output counted one per chunk, or by /tokenize
	finalOnly         int // continuous usage asked for, usage only at the end
	chatShape         int // chat-shaped chunks on the completions API
	promptUsage       int // prompt_tokens came from usage
	lenJudged, lenOff int // outputs counted exactly, and those >10% off the length asked
	lenMin, lenMax    int // among the judged
}

// example counts one failure under its distinct error.
func (a *levelAgg) example(r *Record) {
	body := r.Body
	if body == "" {
		body = head([]byte(r.Error), bodyBytes)
	}
	for i := range a.examples {
		if e := &a.examples[i]; e.Kind == r.Failure && e.Status == r.Status && e.Body == body {
			e.Count++
			return
		}
	}
	if len(a.examples) < maxExamples {
		a.examples = append(a.examples, phases.FailureExample{Kind: r.Failure, Status: r.Status, Body: body, Count: 1})
	}
}

// observe notes what a completed request showed about the server.
func (a *levelAgg) observe(r *Record) {
	o := &a.obs
	switch r.TokenSource {
	case SourceChunks:
		o.chunks++
	case SourceTokenize:
		o.tokenized++
	case SourceFinal:
		if r.contAsked {
			o.finalOnly++
		}
	}
	if r.chatShape {
		o.chatShape++
	}
	if r.promptUsage {
		o.promptUsage++
	}
	if r.TokenSource != SourceChunks && a.outputLen > 0 {
		if o.lenJudged == 0 || r.OutputTokens < o.lenMin {
			o.lenMin = r.OutputTokens
		}
		o.lenMax = max(o.lenMax, r.OutputTokens)
		o.lenJudged++
		if d := r.OutputTokens - a.outputLen; 10*d > a.outputLen || -10*d > a.outputLen {
			o.lenOff++
		}
	}
}

// start marks the send of a measured request (the window opens at the first).
func (a *levelAgg) start(sent time.Duration) {
	if !a.haveFirst || sent < a.first {
		a.first, a.haveFirst = sent, true
	}
}

// add takes one finished measured request.
func (a *levelAgg) add(r *Record) {
	recordDur(a.lag, r.sendLag, 1)
	if r.sendLag > a.maxLag {
		a.maxLag = r.sendLag
	}
	if r.end > a.last {
		a.last = r.end
	}
	if r.Failure == FailCancelled {
		return
	}
	if !r.Completed() {
		a.failed++
		a.failures[r.Failure]++
		a.example(r)
		return
	}
	a.completed++
	if a.slo != nil && a.slo.good(r) {
		a.sloc.good++
		a.sloc.goodTok += int64(r.OutputTokens)
	}
	a.observe(r)
	a.tokEvents += int64(r.tokEvents)
	a.tokReads += int64(r.tokReads)
	a.sources[r.TokenSource]++
	a.inTok += int64(r.InputTokens)
	a.outTok += int64(r.OutputTokens)
	recordDur(a.ttft, r.ttft, 1)
	recordDur(a.e2el, r.e2el, 1)
	if r.OutputTokens > 1 {
		recordDur(a.tpot, r.tpot, 1)
	}
	for _, s := range r.itl {
		recordDur(a.itl, s.perToken, int64(s.tokens))
	}
	for _, g := range r.chunkGaps {
		recordDur(a.itlChunk, g, 1)
	}
}

// result renders the level's figures.
func (a *levelAgg) result(concurrency int, rate float64) phases.LevelResult {
	lr := phases.LevelResult{Concurrency: concurrency, Rate: rate, Completed: a.completed, Failed: a.failed,
		Failures: map[string]int{}, TotalInputTokens: a.inTok, TotalOutputTokens: a.outTok}
	for k, v := range a.failures {
		lr.Failures[k] = v
	}
	if a.haveFirst && a.last > a.first {
		lr.DurationS = (a.last - a.first).Seconds()
		lr.RequestThroughput = float64(a.completed) / lr.DurationS
		lr.OutputThroughput = float64(a.outTok) / lr.DurationS
	}
	lr.MeanTTFTms, lr.MedianTTFTms, lr.P90TTFTms, lr.P99TTFTms = stats4(a.ttft)
	lr.MeanTPOTms, lr.MedianTPOTms, lr.P90TPOTms, lr.P99TPOTms = stats4(a.tpot)
	lr.MeanITLms, lr.MedianITLms, lr.P90ITLms, lr.P99ITLms = stats4(a.itl)
	lr.MeanITLChunkms, lr.MedianITLChunkms, lr.P90ITLChunkms, lr.P99ITLChunkms = stats4(a.itlChunk)
	lr.MeanE2ELms, lr.MedianE2ELms, lr.P90E2ELms, lr.P99E2ELms = stats4(a.e2el)
	lr.StdTTFTms, lr.StdTPOTms, lr.StdITLms, lr.StdE2ELms = std(a.ttft), std(a.tpot), std(a.itl), std(a.e2el)
	lr.MaxConcurrency = concurrency
	if rate > 0 {
		lr.MaxConcurrency = 0
	}
	lr.Percentiles = a.pcts.of(map[string]*hdrhistogram.Histogram{"ttft": a.ttft, "tpot": a.tpot, "itl": a.itl, "e2el": a.e2el})
	if a.tokReads > 0 {
		lr.EventsPerRead = math.Round(1000*float64(a.tokEvents)/float64(a.tokReads)) / 1000
	}
	lr.FailureExamples = append([]phases.FailureExample(nil), a.examples...)
	lr.TokenSource = worstSource(a.sources)
	lr.TokenSources = map[string]int{}
	for k, v := range a.sources {
		lr.TokenSources[k] = v
	}
	if a.lag.TotalCount() > 0 {
		lr.P99SendLagms = float64(a.lag.ValueAtQuantile(99)) / 1e3
		lr.MedianSendLagms = float64(a.lag.ValueAtQuantile(50)) / 1e3
		lr.MaxSendLagms = ms(a.maxLag)
	}
	return lr
}

// worstSource is the least exact token source any request used, so the
// level never claims more precision than its weakest request had.
func worstSource(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return sourceRank(keys[i]) > sourceRank(keys[j]) })
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

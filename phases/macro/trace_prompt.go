package macro

import (
	"math/rand/v2"
	"strings"
	"time"
)

// This file turns a trace's requests into prompts and a schedule: equal
// hash ids are equal blocks of words, so the trace's prefix reuse reaches
// the server's cache, and the arrival times are cut to a window and scaled
// by a speed factor.

// tracePrompts makes a trace's prompts; one goroutine uses it.
type tracePrompts struct {
	block        int     // tokens per hash id
	tokensPerWrd float64 // from /tokenize calibration, 1 when unknown
	seed         uint64
	sb           strings.Builder
}

func newTracePrompts(block int, seed uint64) *tracePrompts {
	return &tracePrompts{block: block, tokensPerWrd: 1, seed: seed}
}

// wordsFor is the number of words that make about tokens tokens.
func (p *tracePrompts) wordsFor(tokens int) int {
	return max(int(float64(tokens)/p.tokensPerWrd+0.5), 1)
}

// prompt is request i's prompt: its hash ids' blocks (the same words for
// the same id, whichever request holds it), then words of its own up to
// its input length.
func (p *tracePrompts) prompt(i int, req TraceRequest) string {
	p.sb.Reset()
	left := req.InputLen
	for _, id := range req.HashIDs {
		n := min(p.block, left)
		p.appendWords(rand.New(rand.NewPCG(p.seed, uint64(id))), p.wordsFor(n))
		if left -= n; left <= 0 {
			break
		}
	}
	if left > 0 { // the rest is this request's own
		p.appendWords(rand.New(rand.NewPCG(p.seed^0x5bd1e995, uint64(i)+1<<62)), p.wordsFor(left))
	}
	return p.sb.String()
}

func (p *tracePrompts) appendWords(rng *rand.Rand, n int) {
	for range n {
		if p.sb.Len() > 0 {
			p.sb.WriteByte(' ')
		}
		p.sb.WriteString(words[rng.IntN(len(words))])
	}
}

// CacheBlock is the block, in tokens, a server's prefix cache holds whole
// (vLLM's default block size, the simulated server's too): the reuse a
// trace implies counts the prefix a request shares in whole blocks of it.
const CacheBlock = 16

// ImpliedReuse is the share of the requests' input tokens that a prefix
// cache without bound, holding whole blocks of cacheBlock tokens, would
// hold when each arrives: the leading blocks whose hash ids came before,
// each up to the length it was sent with (a block first sent short, as a
// prompt's last, is reused only that far), that prefix cut to whole cache
// blocks. It is 0 for a trace without hash ids.
func ImpliedReuse(reqs []TraceRequest, block, cacheBlock int) float64 {
	cacheBlock = max(cacheBlock, 1)
	seen := map[int64]int{} // tokens of the block sent so far
	var hit, all int
	for _, r := range reqs {
		all += r.InputLen
		left, prefix, shared := r.InputLen, true, 0
		for _, id := range r.HashIDs {
			n := min(block, left)
			if prefix {
				shared += min(n, seen[id])
				prefix = seen[id] >= n
			}
			seen[id] = max(seen[id], n)
			if left -= n; left <= 0 {
				break
			}
		}
		hit += shared / cacheBlock * cacheBlock
	}
	if all == 0 {
		return 0
	}
	return float64(hit) / float64(all)
}

// TraceWindow is the part of a trace replayed: its requests from start for
// dur (0: to the end), with arrival times from the window's first request
// divided by speed (2 replays twice as fast). The replay sends that first
// request at once, so the quiet before it in the window is not waited.
type TraceWindow struct {
	Start, Dur time.Duration
	Speed      float64
}

// Cut is the requests in the window, their times scaled; the trace's own
// requests are not changed.
func (w TraceWindow) Cut(reqs []TraceRequest) []TraceRequest {
	speed := w.Speed
	if speed <= 0 {
		speed = 1
	}
	var out []TraceRequest
	first := time.Duration(-1)
	for _, r := range reqs {
		if r.At < w.Start || (w.Dur > 0 && r.At >= w.Start+w.Dur) {
			continue
		}
		if first < 0 {
			first = r.At
		}
		r.At = time.Duration(float64(r.At-first) / speed)
		out = append(out, r)
	}
	return out
}

// TraceSummary is what a replayed window holds, for a sweep's JSON: its
// requests, span and mean rate, and the reuse its hash ids imply.
type TraceSummary struct {
	Format        string  `json:"format"`
	File          string  `json:"file,omitempty"`
	Speed         float64 `json:"speed"`
	Requests      int     `json:"requests"`
	SpanSeconds   float64 `json:"span_seconds"`
	MeanRate      float64 `json:"mean_rate"`               // requests per second over the span
	ImpliedReuse  float64 `json:"implied_reuse,omitempty"` // share of input tokens a prefix cache can hold
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	BlockTokens   int     `json:"block_tokens,omitempty"`
	DistinctBlock int     `json:"distinct_blocks,omitempty"`
}

// Summarize sums a window of the trace up (reqs as Cut returns them).
func (t *Trace) Summarize(w TraceWindow, reqs []TraceRequest) TraceSummary {
	s := TraceSummary{Format: t.Format, File: t.File, Speed: max(w.Speed, 0), Requests: len(reqs), BlockTokens: t.BlockSize}
	if s.Speed == 0 {
		s.Speed = 1
	}
	ids := map[int64]struct{}{}
	for _, r := range reqs {
		s.InputTokens += int64(r.InputLen)
		s.OutputTokens += int64(r.OutputLen)
		for _, id := range r.HashIDs {
			ids[id] = struct{}{}
		}
	}
	s.DistinctBlock = len(ids)
	if len(reqs) > 1 {
		s.SpanSeconds = reqs[len(reqs)-1].At.Seconds()
		if s.SpanSeconds > 0 {
			s.MeanRate = float64(len(reqs)-1) / s.SpanSeconds
		}
	}
	if t.BlockSize > 0 {
		s.ImpliedReuse = ImpliedReuse(reqs, t.BlockSize, CacheBlock)
	}
	return s
}

package macro

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// agreeWithin is how far apart the server's generated tokens and the
// client's received tokens may be over one window before it is said.
const agreeWithin = AgreeWithin

// AgreeWithin is how far apart (a share) the server's and the client's
// tokens over a window still agree.
const AgreeWithin = 0.02

// window reads the server's token counter at the edges of a level's
// throughput window, so the server's tokens and the client's cover the
// same seconds (a scrape loop's own seconds do not line up with them).
type window struct {
	open, close        chan edge // the edge scrapes; nil until asked
	openedAt, closedAt time.Time
}

// edge is the server's figures and the client's received tokens read at
// one instant.
type edge struct {
	st     phases.ServerStats
	tokens int64
}

// ask starts a scrape now, beside the once-a-second loop (so it does not
// wait behind one), without blocking the dispatcher; nil without a
// scraper. The client's count is read when the server's answer came: the
// edge is one instant on both sides.
func (r *runner) ask(tokens func() int64) chan edge {
	if r.sctx == nil {
		return nil
	}
	ch := make(chan edge, 1)
	r.edges.Add(1)
	go func() {
		defer r.edges.Done()
		st := r.scrapeOnce(r.sctx)
		ch <- edge{st, tokens()}
	}()
	return ch
}

// opened marks the window's start; tokens reads the client's count.
func (w *window) opened(r *runner, tokens func() int64) {
	w.open, w.openedAt = r.ask(tokens), time.Now()
}

// closed marks the window's end, once.
func (w *window) closed(r *runner, tokens func() int64) {
	if w.close != nil || w.open == nil {
		return
	}
	w.close, w.closedAt = r.ask(tokens), time.Now()
}

// wait takes an edge scrape, giving up after a few seconds.
func wait(ctx context.Context, ch chan edge) (edge, bool) {
	if ch == nil {
		return edge{}, false
	}
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case e := <-ch:
		return e, e.st.Available
	case <-t.C:
	case <-ctx.Done():
	}
	return edge{}, false
}

// compare sets the server's tokens over the window beside the client's and
// says why when they differ by more than 2%.
func (w *window) compare(ctx context.Context, sl *phases.ServerLevel, tokens string) *warning {
	if sl == nil || !sl.Available {
		return nil
	}
	ea, okA := wait(ctx, w.open)
	eb, okB := wait(ctx, w.close)
	a, b := ea.st, eb.st
	if !okA || !okB || !b.At.After(a.At) {
		return nil
	}
	gen := b.GenTokensTotal - a.GenTokensTotal
	if gen < 0 {
		return nil // the server restarted inside the window
	}
	client := eb.tokens - ea.tokens
	span := b.At.Sub(a.At).Seconds()
	sl.WindowS = span
	sl.WindowGenerationTokens = gen
	sl.WindowClientTokens = client
	sl.GenerationTokS = gen / span
	sl.GenerationWindow = "client_window"
	sl.StepMix = stepMix(a, b, gen, span)
	if client <= 0 && gen <= 0 {
		return nil
	}
	diff := (gen - float64(client)) / math.Max(float64(client), 1)
	if math.Abs(diff) <= agreeWithin {
		sl.TokensAgree = true
		return nil
	}
	var text string
	if diff > 0 {
		text = fmt.Sprintf("the server generated %.0f%% more tokens than this client received over the level's throughput window (%s against %d): "+
			"another client of the server, or requests this client had given up on", 100*diff, units.Thousands(gen), client)
	} else {
		text = fmt.Sprintf("the server generated %.0f%% fewer tokens than this client received over the level's throughput window (%s against %d): ",
			-100*diff, units.Thousands(gen), client)
		if tokens == SourceContinuous || tokens == SourceFinal {
			text += "its counter lags what it has sent, or it counts tokens differently (speculative decoding, several engines not all scraped)"
		} else {
			text += "this client's token counts are estimates (" + tokens + ")"
		}
	}
	sl.TokenAgreement = text
	return &warning{warnServerTokens, text}
}

// scheduler sets how the server's scheduler was occupied: the most
// requests seen running, the share of scrapes at that many, and the share
// with requests waiting, over the scrapes inside the throughput window
// (all of the level's when it has fewer than two).
func (w *window) scheduler(sl *phases.ServerLevel, samples []phases.ServerStats) {
	if sl == nil || !sl.Available {
		return
	}
	var in, all []phases.ServerStats
	for _, s := range samples {
		if !s.Available {
			continue
		}
		all = append(all, s)
		if !w.openedAt.IsZero() && !s.At.Before(w.openedAt) && (w.closedAt.IsZero() || !s.At.After(w.closedAt)) {
			in = append(in, s)
		}
	}
	if len(in) < 2 {
		in = all
	}
	if len(in) == 0 {
		return
	}
	var atMax, waiting int
	for _, s := range in {
		sl.MaxRunning = max(sl.MaxRunning, s.Running)
	}
	for _, s := range in {
		if s.Running >= sl.MaxRunning {
			atMax++
		}
		if s.Waiting > 0 {
			waiting++
		}
	}
	sl.AtMaxRunningShare = float64(atMax) / float64(len(in))
	sl.WaitingShare = float64(waiting) / float64(len(in))
}

// stepMix is the engine's steps over the window, from its counters; nil
// without them or when one went back (a restart).
func stepMix(a, b phases.ServerStats, gen, span float64) *phases.StepMix {
	if !a.HasSteps || !b.HasSteps {
		return nil
	}
	m := &phases.StepMix{WindowS: span, Steps: b.StepsTotal - a.StepsTotal, StepTokens: b.StepTokensTotal - a.StepTokensTotal,
		PromptTokens: b.PromptTokensTotal - a.PromptTokensTotal, GenerationTokens: gen}
	if m.Steps <= 0 || m.StepTokens < 0 || m.PromptTokens < 0 {
		return nil
	}
	m.StepsPerS = m.Steps / span
	m.TokensPerStep = m.StepTokens / m.Steps
	m.DecodeTokens = max(0, m.StepTokens-m.PromptTokens)
	return m
}

package profile

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
)

// bgLoad is a steady closed-loop load: conc streams, each sending the next
// request as soon as its last one finished, until its context ends.
type bgLoad struct {
	done, started atomic.Int64
	tokens        atomic.Int64
	mu            sync.Mutex
	err           error
	wg            sync.WaitGroup
	ctx           context.Context
}

func (l *bgLoad) wait() { l.wg.Wait() }

// failed is the first request error, nil when none (or only cancellations).
func (l *bgLoad) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// startLoad starts conc streams of requests long enough to span a window:
// at least 2×Steps+16+conc output tokens each (the first admitted stream
// decodes while up to conc prefills are admitted after it), so no request
// ends, and no new prefill starts, inside the window.
func (r *run) startLoad(ctx context.Context, model string, conc int) *bgLoad {
	return r.startStreams(ctx, model, conc, max(r.cfg.OutputLen, 2*r.cfg.Steps+16+conc))
}

// startSteady starts conc streams of the sweep's own requests (its prompt
// and output lengths), so arrivals, prefills and completions go on as in
// the sweep's level.
func (r *run) startSteady(ctx context.Context, model string, conc int) *bgLoad {
	return r.startStreams(ctx, model, conc, r.cfg.OutputLen)
}

func (r *run) startStreams(ctx context.Context, model string, conc, maxTokens int) *bgLoad {
	cfg := r.cfg
	l := &bgLoad{ctx: ctx}
	spec := LoadSpec{URL: cfg.URL, API: cfg.API, Model: model, APIKey: cfg.APIKey, Prompt: promptOf(cfg.InputLen),
		Conc: conc, MaxTokens: maxTokens}
	fail := func(err error) {
		if err == nil || ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		l.mu.Unlock()
	}
	sent := func() { l.started.Add(1) }
	ended := func(tokens int, err error) {
		if err != nil {
			fail(err)
			return
		}
		l.tokens.Add(int64(tokens))
		l.done.Add(1)
	}
	load := cfg.Load
	if load == nil {
		load = func(ctx context.Context, spec LoadSpec, sent func(), ended func(int, error)) error {
			return RunLoad(ctx, cfg.Host, spec, sent, ended)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fail(load(ctx, spec, sent, ended))
	}()
	return l
}

// LoadSpec is a capture window's load: Conc streams of the same request,
// each sending the next as soon as its last one ended.
type LoadSpec struct {
	URL       string `json:"url"` // the server as seen from the host
	API       string `json:"api"`
	Model     string `json:"model"`
	APIKey    string `json:"api_key,omitempty"`
	Prompt    string `json:"prompt"`
	Conc      int    `json:"conc"`
	MaxTokens int    `json:"max_tokens"`
}

// LoadFunc runs spec's load until ctx ends, calling sent before each
// request and ended after it with its completion tokens or its error (a
// stream stops at its first error). Its error is one that stopped the
// whole load.
type LoadFunc func(ctx context.Context, spec LoadSpec, sent func(), ended func(tokens int, err error)) error

// RunLoad sends spec's load through h until ctx ends and every stream has
// stopped.
func RunLoad(ctx context.Context, h remote.Host, spec LoadSpec, sent func(), ended func(tokens int, err error)) error {
	c := newClient(h, spec.URL, spec.APIKey)
	defer c.close()
	var wg sync.WaitGroup
	for w := 0; w < spec.Conc; w++ {
		prompt := streamPrompt(spec.Prompt, w)
		wg.Go(func() {
			for ctx.Err() == nil {
				sent()
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				n, err := c.complete(rctx, spec.API, spec.Model, prompt, spec.MaxTokens)
				cancel()
				if ctx.Err() != nil {
					return
				}
				ended(n, err)
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// streamPrompt is stream w's prompt: as many random words as the load's
// prompt has, drawn as the sweep draws its prompts, from a seed of the
// stream's own. Streams that share most of a prompt, or a prompt that
// repeats a few words, decode near-identical tokens greedily; on an MoE
// model those route to the same few experts, and a window of them times a
// cheaper step than the sweep's varied requests (one H200, the fieldrig at
// C=8: 7.2 ms against 9.3 ms per step).
func streamPrompt(prompt string, w int) string {
	return macro.RandomWords(uint64(w)+1, len(strings.Fields(prompt)))
}

// warmSteps is how many engine steps pass after the streams start before
// the profiler starts, so every stream is past its first prefill.
const warmSteps = 4

// warm waits until the streams decode: warmSteps engine steps after every
// one of them is running (vllm:num_requests_running reaches conc), so the
// window holds decode steps, not the admission's prefills. A server that
// runs fewer than conc at once is given 2×conc steps to admit them; without
// a running gauge, warmSteps steps after the last stream started; without
// metrics, two seconds.
func (r *run) warm(ctx context.Context, l *bgLoad, conc int) error {
	deadline := time.Now().Add(2 * time.Minute)
	var base, first float64
	haveBase := false
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := l.failed(); err != nil {
			return fmt.Errorf("the load at C=%d failed before the window: %w", conc, err)
		}
		if l.started.Load() < int64(conc) {
			continue
		}
		m := r.c.metrics(ctx)
		switch {
		case !m.haveSteps && time.Since(start) >= 2*time.Second:
			return nil
		case !m.haveSteps:
		case !haveBase:
			base, haveBase, first = m.steps, true, m.steps
		case m.haveRunning && m.running < float64(conc) && m.steps-first < float64(2*conc):
			base = m.steps // still admitting: count the warm steps from all running
		case m.steps-base >= warmSteps:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server ran no engine step for 2 minutes at C=%d", conc)
		}
	}
}

// warmSteady waits until every stream has completed a request, so the
// window opens on the sweep's steady state (arrivals and completions going
// on), not on the first admission.
func (r *run) warmSteady(ctx context.Context, l *bgLoad, conc int) error {
	deadline := time.Now().Add(5 * time.Minute)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for l.done.Load() < int64(conc) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := l.failed(); err != nil {
			return fmt.Errorf("the load at C=%d failed before the window: %w", conc, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("C=%d: %d of %d streams completed a request in 5 minutes", conc, l.done.Load(), conc)
		}
	}
	return nil
}

// Bounds of the profiler-off measurement of the decode step's period.
const (
	periodSteps = 20
	periodMax   = 3 * time.Second
)

// stepPeriod is the decode-only load's wall time per engine step with the
// profiler off (ms), read from /metrics over periodSteps steps or
// periodMax, just before the window: the profiler adds host time to every
// step it records. 0 without the step counter.
func (r *run) stepPeriod(ctx context.Context, l *bgLoad, conc int) float64 {
	m0, t0 := r.c.metrics(ctx), time.Now()
	if !m0.haveSteps {
		return 0
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
		if l.failed() != nil {
			return 0
		}
		m, now := r.c.metrics(ctx), time.Now()
		n := m.steps - m0.steps
		if !m.haveSteps || n < 0 {
			return 0
		}
		if n >= periodSteps || now.Sub(t0) >= periodMax {
			if n < 2 {
				return 0
			}
			return round3(now.Sub(t0).Seconds() * 1000 / n)
		}
	}
}

// steadySteps is how many engine steps a steady window records: the
// profile's steps, and at least one request's output and some more, so
// the window holds arrivals at any concurrency.
func (r *run) steadySteps() int { return max(r.cfg.Steps, r.cfg.OutputLen+16) }

// record waits while the profiler records steps engine steps (counted in
// /metrics), or, without metrics, until Steps×C output tokens completed;
// bounded in time by a generous multiple of a slow step.
func (r *run) record(ctx context.Context, l *bgLoad, conc, steps int) (recording, error) {
	r.begin(ctx, "record", fmt.Sprintf("C=%d: recording %d engine steps", conc, steps))
	var rec recording
	// The load's counts first: the profiler is on, and a request that
	// completes during the /metrics read is in the window.
	started0, tokens0, done0 := l.started.Load(), l.tokens.Load(), l.done.Load()
	rec.m0, rec.t0 = r.c.metrics(ctx), time.Now()
	steps0, have := rec.m0.steps, rec.m0.haveSteps
	rec.windowTime = max(time.Minute, time.Duration(steps)*2*time.Second)
	deadline := time.Now().Add(rec.windowTime)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-t.C:
		}
		rec.started = int(l.started.Load() - started0)
		rec.tokens, rec.done = l.tokens.Load()-tokens0, int(l.done.Load()-done0)
		if err := l.failed(); err != nil {
			return rec, fmt.Errorf("the load at C=%d failed while recording: %w", conc, err)
		}
		if have {
			if m := r.c.metrics(ctx); m.haveSteps {
				rec.m1, rec.t1 = m, time.Now()
				rec.steps, rec.haveSteps = int(m.steps-steps0), true
				if m.haveRunning {
					rec.maxRunning = max(rec.maxRunning, int(m.running))
				}
			}
		}
		reached := rec.haveSteps && rec.steps >= steps ||
			!have && rec.tokens >= int64(steps*conc)
		if reached {
			r.done(ctx, fmt.Sprintf("C=%d: %d steps recorded", conc, rec.steps))
			return rec, nil
		}
		if time.Now().After(deadline) {
			rec.bytime = true
			r.done(ctx, fmt.Sprintf("C=%d: time bound reached after %d steps", conc, rec.steps))
			return rec, nil
		}
		if time.Since(last) >= time.Second {
			last = time.Now()
			r.progress(ctx, fmt.Sprintf("C=%d: %d/%d steps", conc, rec.steps, steps))
		}
	}
}

package onhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
)

// session is one run of the agent, seen from here: the lines it sends,
// and what they have told so far (kept for when the result never comes).
type session struct {
	s  *Sweep
	em *phases.Emitter

	mu       sync.Mutex
	done     *up
	started  bool // the sweep started on the host
	levels   []phases.LevelResult
	plateau  *phases.Plateau
	search   *phases.Search
	warnings []string
	errTail  []string
	parts    strings.Builder // a long result's pieces
	gotDone  chan struct{}
}

// run runs the agent and waits for its result; see Run.
func (s *Sweep) run(ctx context.Context, em *phases.Emitter) (*macro.Result, error) {
	spec := specOf(s.cfg, s.opt.MetricsURL)
	spec.HostName = s.opt.Host.Name()
	spec.AwaitStart, spec.Histograms = s.opt.AwaitStart, s.opt.OnBatch != nil
	start, err := s.prepare(ctx, &spec)
	if err != nil {
		return nil, err
	}
	se := &session{s: s, em: em, gotDone: make(chan struct{})}
	pr, pw := io.Pipe()
	go s.feed(ctx, pw, spec, se.gotDone)
	// The agent outlives ctx by the grace period, so a cancelled sweep
	// can send what it measured.
	runErr := supervise(ctx, start, pr, s.opt.Grace, se.line)
	pw.Close()
	return se.outcome(ctx, runErr)
}

// feed writes the spec and then the steering operations to the agent's
// stdin, and closes it when ctx ends (the agent then cancels its sweep) or
// the agent is done.
func (s *Sweep) feed(ctx context.Context, w *io.PipeWriter, spec Spec, done <-chan struct{}) {
	defer w.Close()
	write := func(d down) bool {
		b, err := json.Marshal(d)
		if err != nil {
			return false
		}
		_, err = w.Write(append(b, '\n'))
		return err == nil
	}
	if !write(down{Spec: &spec}) {
		return
	}
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, d := range q {
			if !write(d) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-s.wake:
		}
	}
}

// line takes one line of the agent's output; its events are passed on
// until ectx ends.
func (se *session) line(ectx context.Context, l remote.Line) {
	if l.Stream == remote.Stderr {
		se.mu.Lock()
		se.errTail = append(se.errTail, remote.ScrubSecrets(l.Text))
		if len(se.errTail) > 8 {
			se.errTail = se.errTail[1:]
		}
		se.mu.Unlock()
		return
	}
	var u up
	if json.Unmarshal([]byte(l.Text), &u) != nil {
		return // a login banner or an rc file's output
	}
	switch {
	case u.Part != "":
		se.mu.Lock()
		se.parts.WriteString(u.Part)
		se.mu.Unlock()
	case u.Done:
		se.mu.Lock()
		if u.Parts {
			var res macro.Result
			if err := json.Unmarshal([]byte(se.parts.String()), &res); err == nil {
				u.Result = &res
			}
		}
		if se.done == nil {
			se.done = &u
			close(se.gotDone)
		}
		se.mu.Unlock()
	case u.Event != nil:
		se.event(ectx, u.Event)
	case u.JSONL != nil:
		se.jsonl(u.JSONL)
	case u.Log != "":
		se.s.logf("%s", u.Log)
	case u.Hist != nil:
		if se.s.opt.OnBatch != nil {
			se.s.opt.OnBatch(*u.Hist)
		}
	case u.Ready:
		if se.s.opt.OnReady != nil {
			se.s.opt.OnReady()
		}
	case u.Started != 0:
		if se.s.opt.OnStarted != nil {
			se.s.opt.OnStarted(time.Unix(0, u.Started))
		}
	}
}

// event passes one of the engine's events on, stamped now; the agent's
// own start and finish are left out (the run here brackets the sweep).
func (se *session) event(ectx context.Context, raw []byte) {
	ev, err := phases.Decode(raw)
	if err != nil {
		return
	}
	se.mu.Lock()
	switch d := ev.Data.(type) {
	case phases.PhaseStarted:
		se.started = true
		se.mu.Unlock()
		return
	case phases.PhaseFinished:
		se.mu.Unlock()
		return
	case phases.LevelResult:
		se.levels = append(se.levels, d)
	case phases.Plateau:
		se.plateau = &d
	case phases.Search:
		se.search = &d
	case phases.MacroWarning:
		se.warnings = append(se.warnings, d.Text)
	case phases.MacroPath:
		se.s.stampPath(&d)
		ev.Data = d
	}
	se.mu.Unlock()
	switch d := ev.Data.(type) {
	case phases.LevelStarted:
		se.s.setTarget(d.Concurrency)
	case phases.MacroTick:
		se.s.setTarget(d.Concurrency)
	}
	if se.em == nil || se.em.Out == nil {
		return
	}
	ev.Time = time.Now()
	if se.em.Now != nil {
		ev.Time = se.em.Now()
	}
	select {
	case se.em.Out <- ev:
	case <-ectx.Done():
	}
}

// jsonl writes one per-request record to the sweep's JSONL writer.
func (se *session) jsonl(rec []byte) {
	w := se.s.cfg.JSONL
	if w == nil {
		return
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	if _, err := w.Write(append(append([]byte(nil), rec...), '\n')); err == nil {
		if f, ok := w.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
}

// outcome is the sweep's result and error once the agent has ended: its
// own result when it sent one, else the levels its events carried.
func (se *session) outcome(ctx context.Context, runErr error) (*macro.Result, error) {
	se.mu.Lock()
	defer se.mu.Unlock()
	host := se.s.opt.Host.Name()
	if d := se.done; d != nil {
		var err error
		switch {
		case d.Err == "" && d.Result == nil && se.started:
			err = fmt.Errorf("the result from host %s could not be read", host)
		case d.Err == "":
		case d.Cancelled && ctx.Err() != nil:
			err = ctx.Err()
		case d.Input:
			err = &phases.InputError{Err: errors.New(d.Err)}
		default:
			err = fmt.Errorf("on host %s: %s", host, d.Err)
		}
		if d.Result == nil && se.started {
			return se.partial(err), err // what the events carried
		}
		if d.Result != nil && d.Result.Path != nil {
			se.s.stampPath(d.Result.Path)
		}
		return d.Result, err
	}
	var err error
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("the load generator on host %s did not send its result within %s of the cancel: %w", host, se.s.opt.Grace, ctx.Err())
	case runErr == nil:
		err = fmt.Errorf("the load generator on host %s ended without a result", host)
	default:
		err = fmt.Errorf("the load generator on host %s: %w", host, runErr)
	}
	if tail := strings.Join(se.errTail, "\n"); tail != "" && !strings.Contains(err.Error(), tail) {
		err = fmt.Errorf("%w\n%s", err, tail)
	}
	if !se.started {
		return nil, err
	}
	return se.partial(err), err
}

// partial is the result made from the events that came before the agent
// was lost: its finished levels, the plateau, the warnings, and why it
// ended.
func (se *session) partial(err error) *macro.Result {
	c := se.s.cfg
	res := &macro.Result{URL: remote.MaskURL(c.URL), Model: c.Model, API: c.API, InputLen: c.InputLen, OutputLen: c.OutputLen,
		Requests: c.Requests, DurationS: c.Duration.Seconds(), Warmup: c.Warmup, Rate: c.Rate,
		Levels: append([]phases.LevelResult{}, se.levels...), Plateau: se.plateau, Search: se.search, Stopped: "host lost",
		Path: &phases.MacroPath{Kind: phases.PathHost, Levels: []phases.PathLevel{}}}
	se.s.stampPath(res.Path)
	res.Warnings = append(append([]string{}, se.warnings...),
		fmt.Sprintf("the result from the load generator on host %s was lost after %d finished level(s): %s; the levels it finished are kept, the one under way is not",
			se.s.opt.Host.Name(), len(se.levels), firstLine(err.Error())))
	return res
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// readLines calls out for every line read from r (at most 16 MiB each).
func readLines(r io.Reader, out func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		out(sc.Text())
	}
	io.Copy(io.Discard, r)
}
